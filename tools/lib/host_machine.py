"""What the host-measurement tools (tools/*_host*.py) record about the machine they ran on."""
import platform


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, else what platform reports."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def environment(torch_version, intra_op_threads):
    """The machine and software a measurement ran on, for its JSON file's "environment"."""
    import os
    import time
    return {
        "torch": torch_version,
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "intra_op_threads": intra_op_threads,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_json(path, result):
    """|result| to |path|, indented by one, with a final newline."""
    import json
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


def report_rows(rows, torch):
    """In a child process: |rows| and the PyTorch it ran, as one JSON line on stdout."""
    import json
    print(json.dumps({"rows": rows, "torch": torch.__version__,
                      "intra_op_threads": torch.get_num_threads()}))


def run_children(script, repeats, env=None):
    """Runs |script| --child |repeats| times, each a fresh process (with |env| added to the
    environment), and returns each one's rows (report_rows), the PyTorch version and its intra-op
    threads."""
    import json
    import os
    import subprocess
    import sys
    runs, torch_version, threads = [], None, None
    for _ in range(repeats):
        child = subprocess.run([sys.executable, script, "--child"],
                               env={**os.environ, **(env or {})}, check=True,
                               capture_output=True, text=True)
        result = json.loads(child.stdout)
        torch_version, threads = result["torch"], result["intra_op_threads"]
        runs.append(result["rows"])
    return runs, torch_version, threads
