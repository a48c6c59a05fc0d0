"""`kafkaref bench explore`: exhaustive exploration speed and memory on the reference workload,
kip320 with 3 replicas, log size 2, 2 records, epochs 0..2 (every invariant checked).

TLC, the TLA+ model checker, cannot run on these machines (its jar is not in a reachable
registry), so its figure is a stated reference: about 80 s with 2 workers on this kind of 2-core
machine for the same configuration. The run happens in a fresh child process so that its peak
RSS is the exploration's own; its progress goes to the progress line the command hands in.
"""

from __future__ import annotations

import multiprocessing
import resource

TLC_REFERENCE_SECONDS = 80.0


def _explore_in_child(queue, progress_line) -> None:
    from kafkaref.spec.check import run_spec
    from kafkaref.spec.state import Bounds

    progress = progress_line("exploring kip320, 3 replicas") if progress_line else None
    result = run_spec("kip320", Bounds(3, 2, 2, 2), progress=progress)
    if progress is not None:
        progress.done()
    queue.put(
        {
            "distinct_states": result.distinct_states,
            "states_generated": result.states_generated,
            "depth": result.depth,
            "holds": result.ok and result.complete,
            "wall_seconds": result.wall_seconds,
            "states_per_second": result.states_per_second,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )


def bench_explore(progress_line=None) -> dict:
    """progress_line: label -> a progress callback with done(), made in the child (so a
    picklable class, such as commands/explore.py's ProgressLine); None: no progress."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_explore_in_child, args=(queue, progress_line))
    child.start()
    figures = queue.get()
    child.join()
    figures["tlc_reference_seconds"] = TLC_REFERENCE_SECONDS
    figures["speedup_vs_tlc_reference"] = TLC_REFERENCE_SECONDS / figures["wall_seconds"]
    row = {
        "workload": "kip320, 3 replicas, 2/2/2",
        "distinct states": figures["distinct_states"],
        "seconds": figures["wall_seconds"],
        "states/s": figures["states_per_second"],
        "peak RSS MB": figures["peak_rss_mb"],
        "vs TLC 80 s": f"{figures['speedup_vs_tlc_reference']:.2f}x",
    }
    return {"title": "kafkaref bench explore", "rows": [row], "figures": figures}
