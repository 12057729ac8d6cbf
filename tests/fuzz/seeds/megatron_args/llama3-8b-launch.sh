#!/bin/bash
# Llama 3 8B on 4 nodes
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 --nnodes 4 pretrain_gpt.py \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel \
    --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 \
    --group-query-attention --num-query-groups 8 --kv-channels 128 \
    --max-position-embeddings 8192 --position-embedding-type rope --rotary-base 500000 \
    --normalization RMSNorm --norm-epsilon 1e-5 --swiglu --untie-embeddings-and-output-weights \
    --disable-bias-linear --seq-length 8192 --micro-batch-size 1 --global-batch-size 256 \
    --bf16 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
    --recompute-activations --attention-dropout 0.0 --hidden-dropout 0.0 \
    --lr 3e-4 --min-lr 3e-5 --lr-decay-style cosine --train-iters 10000 \
    --data-path /data/c4 --tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Meta-Llama-3-8B \
    --save /ckpt --save-interval 1000 --log-interval 10
