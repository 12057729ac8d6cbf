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
