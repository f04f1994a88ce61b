"""Reading a Google Benchmark JSON file, for bench/plot.py and bench/plot_many_writers.py."""
import json


def load(path):
    """The run's context and its per-repetition rows (aggregate rows left out: the scripts compute
    their own medians and ratios from the repetitions)."""
    with open(path) as f:
        doc = json.load(f)
    runs = [b for b in doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    return doc.get("context", {}), runs
