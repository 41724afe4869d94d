"""What the numba searches' first call costs a process: compiling into an empty cache, then
loading from the cache it left.

Each search a command announces while it loads ("loading the exact solver ...": the exact
solver, the depth-first search, the points beam, nested Monte Carlo search) runs once on a
tiny board in a fresh process whose numba cache (``NUMBA_CACHE_DIR``) is an empty folder,
then in another fresh process on that folder, in the same round. A round's searches share
one folder, in the order below, as a session's commands would; the figure kept is a
round's fastest. Each process also counts numba's cache misses (cached functions it
compiled): a load that compiles has not loaded. NMCS's levels are closures, which numba
never caches: they compile in every process, uncounted.

    python benchmarks/numba_compile.py               # 1 round, about two minutes on 2 cores
    python benchmarks/numba_compile.py --rounds 3 --searches solve,dfs
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import jaxdust
from jaxdust.core import files, flags, machine
from jaxdust.core.progress import progress_bar

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# What each search's loading notice wraps (``loading_notice``), on the boards it uses.
SEARCHES = {
    "solve": "from jaxdust.solver import api; api._load_compiled_code()",
    "dfs": "from jaxdust.solver import dfs; dfs._load_compiled_code()",
    "points-beam": "import numpy as np; from jaxdust.solver import points; points.beam(np.array([[1, 1], [2, 2]], "
                   "np.int8), 1)",
    "nmcs": "import numpy as np; from jaxdust.solver import points; points.nmcs(np.array([[1, 1], [2, 2]], np.int8), 1)",
}
_MEASURE = """
import json, sys, time
import numba
import jaxdust.solver  # imported before the clock: what the notice times is the first call
start = time.perf_counter()
exec(sys.argv[1])
seconds = time.perf_counter() - start
misses = hits = 0
for name, module in list(sys.modules.items()):
    if name.startswith("jaxdust.solver"):
        for value in vars(module).values():
            if isinstance(value, numba.core.registry.CPUDispatcher):
                misses += sum(value.stats.cache_misses.values())
                hits += sum(value.stats.cache_hits.values())
print(json.dumps({"seconds": seconds, "cache_misses": misses, "cache_hits": hits}))
"""


def measure(code: str, cache: str) -> dict:
    """One fresh process's first call of ``code`` with numba's cache in ``cache``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": os.pathsep.join(
        filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    ran = subprocess.run([sys.executable, "-c", _MEASURE, code], capture_output=True, text=True, env=env, cwd=ROOT)
    if ran.returncode:
        raise SystemExit(f"the measuring process failed:\n{ran.stderr[-2000:]}")
    return json.loads(ran.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=flags.positive_int, default=1)
    parser.add_argument("--searches", type=flags.names(SEARCHES, "searches"), default=list(SEARCHES),
                        help=f"comma-separated, of {', '.join(SEARCHES)} (default all)")
    parser.add_argument("--out", type=flags.report_file("numba_compile"), default="results/numba_compile.json")
    args = parser.parse_args(argv)

    rows: dict[str, dict] = {name: {} for name in args.searches}
    with progress_bar(total=args.rounds * len(args.searches) * 2, unit="process") as bar:
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory(prefix="jaxdust-numba-") as cache:
                for name in args.searches:
                    for phase in ("compile", "load"):
                        measured = measure(SEARCHES[name], cache)
                        best = rows[name].get(phase)
                        if best is None or measured["seconds"] < best["seconds"]:
                            rows[name][phase] = measured
                        bar.update(1)
    report = {"benchmark": "numba_compile", "measured_on": machine.measured_on(jaxdust.__version__),
              "rounds": args.rounds, "results": rows}
    files.atomic_write_json(args.out, report)
    print(f"\nThe numba searches' first call in a fresh process, best of {args.rounds} round"
          f"{'s' if args.rounds > 1 else ''} ({machine.cpu_description()}, jaxdust {jaxdust.__version__})\n")
    print("| search | compile s (empty cache) | functions compiled | load s (its cache) | functions compiled |")
    print("|---|---:|---:|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['compile']['seconds']:.1f} | {row['compile']['cache_misses']} "
              f"| {row['load']['seconds']:.2f} | {row['load']['cache_misses']} |")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    flags.run_command(main, "nothing is kept between calls: the same command measures it all again")
