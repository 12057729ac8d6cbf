#!/bin/bash
# Llama 3 8B pretraining with Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed) on two nodes of
# eight GPUs: tp 2 x pp 2 x dp 4, ZeRO-1 in bf16, FlashAttention-2, every layer recomputed.
# An example for `loom simulate --megatron-args` with `--deepspeed-config`
# (llama3-8b-ds_config.json beside it); loom reads it, it does not run it.
export CUDA_DEVICE_MAX_CONNECTIONS=1

torchrun --nproc_per_node 8 --nnodes 2 --node_rank 0 --master_addr node0 --master_port 6000 \
    pretrain_gpt.py \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2 \
    --num-layers 32 \
    --hidden-size 4096 \
    --ffn-hidden-size 14336 \
    --num-attention-heads 32 \
    --num-key-value-heads 8 \
    --seq-length 8192 \
    --max-position-embeddings 8192 \
    --micro-batch-size 1 \
    --global-batch-size 128 \
    --swiglu \
    --normalization rmsnorm \
    --use-rotary-position-embeddings \
    --untie-embeddings-and-output-weights \
    --disable-bias-linear \
    --attention-dropout 0 \
    --hidden-dropout 0 \
    --use-flash-attn-v2 \
    --bf16 \
    --optimizer adam \
    --lr 3e-4 \
    --min-lr 3e-5 \
    --lr-decay-style cosine \
    --train-iters 100000 \
    --data-path 1.0 data/corpus_text_document \
    --tokenizer-type HFTokenizer \
    --tokenizer-model meta-llama/Meta-Llama-3-8B \
    --zero-stage 1 \
    --checkpoint-activations \
    --deepspeed-activation-checkpointing \
    --deepspeed \
    --deepspeed_config llama3-8b-ds_config.json
