"""Start-up benchmark: wall time of small tcpr commands in new processes, with an empty and with
a filled cache (medians; tcp_rules/benchstartup.py).

    .venv/bin/python benchmarks/startup.py [--repeats N] [--json]   (tcpr bench --suite startup)
"""

import argparse

from tcp_rules.benchstartup import startup_suite

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    print(startup_suite(args.json, args.repeats))
