"""The integration suite's order for xdist's worksteal (tests/conftest.py)."""


def deal(ids, seconds, workers: int):
    """The ids in the order that gives each of `workers` consecutive, equal-count queues a like
    share of the expected seconds, each queue longest first."""
    known = sorted(seconds[i] for i in ids if i in seconds)
    default = known[len(known) // 2] if known else 1.0
    order = sorted(ids, key=lambda i: (-seconds.get(i, default), i))
    queues = [[] for _ in range(workers)]
    totals = [0.0] * workers
    # each queue as many tests as worksteal's first split gives its worker: of what is left,
    # an equal share for each worker left (len // workers left)
    room, left = [], len(order)
    for k in range(workers):
        room.append(left // (workers - k))
        left -= room[-1]
    for i in order:
        # the least loaded queue that still has room
        q = min((k for k in range(workers) if len(queues[k]) < room[k]),
                key=lambda k: (totals[k], k))
        queues[q].append(i)
        totals[q] += seconds.get(i, default)
    return [i for q in queues for i in q]
