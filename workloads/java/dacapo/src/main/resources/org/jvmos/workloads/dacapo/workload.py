# jvmos-dacapo jython workload: four small programs that exercise the interpreter the way
# pystone/richards-style benchmarks do (calls, closures, classes, generators, dicts, exceptions).
# The harness defines QUEENS, PRIME_LIMIT, PRODUCERS, PACKETS and WORDS before running this module,
# then calls run(); the Java side recomputes every figure run() reports.

MASK = 0x7fffffff


def lcg(state):
    return (state * 1103515245 + 12345) & MASK


def queens(n):
    """Number of ways to place n queens that do not attack each other."""
    full = (1 << n) - 1

    def place(cols, left, right):
        if cols == full:
            return 1
        found = 0
        free = full & ~(cols | left | right)
        while free:
            bit = free & -free
            free ^= bit
            found += place(cols | bit, ((left | bit) << 1) & full, (right | bit) >> 1)
        return found

    return place(0, 0, 0)


def primes_below(limit):
    flags = [True] * limit
    flags[0] = flags[1] = False
    i = 2
    while i * i < limit:
        if flags[i]:
            for j in xrange(i * i, limit, i):
                flags[j] = False
        i += 1
    return sum(1 for f in flags if f)


class Packet(object):
    __slots__ = ('value', 'hops')

    def __init__(self, value):
        self.value = value
        self.hops = 0


class Mailbox(object):
    def __init__(self):
        self.items = []
        self.head = 0

    def put(self, packet):
        self.items.append(packet)

    def take(self):
        if self.head == len(self.items):
            return None
        packet = self.items[self.head]
        self.head += 1
        if self.head > 256:
            del self.items[:self.head]
            self.head = 0
        return packet


def producer(box, seed, count):
    state = seed
    for _ in xrange(count):
        state = lcg(state)
        box.put(Packet(state % 1000))
        yield 'produced'


def relay(source, sink, expected):
    moved = 0
    while moved < expected:
        packet = source.take()
        if packet is None:
            yield 'idle'
            continue
        packet.hops += 1
        sink.put(packet)
        moved += 1
        yield 'moved'


def consumer(box, expected, totals):
    seen = 0
    while seen < expected:
        packet = box.take()
        if packet is None:
            yield 'idle'
            continue
        totals['sum'] += packet.value
        totals['hops'] += packet.hops
        seen += 1
        yield 'consumed'


def simulate(producers, packets):
    """Round-robin scheduler of generator tasks passing packets through a relay."""
    inbox, outbox = Mailbox(), Mailbox()
    totals = {'sum': 0, 'hops': 0}
    total = producers * packets
    tasks = [producer(inbox, 1000 + p, packets) for p in range(producers)]
    tasks.append(relay(inbox, outbox, total))
    tasks.append(consumer(outbox, total, totals))
    switches = 0
    while tasks:
        alive = []
        for task in tasks:
            try:
                task.next()
                alive.append(task)
            except StopIteration:
                pass
            switches += 1
        tasks = alive
    return totals['sum'], totals['hops'], switches > total


SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'to', 'sa', 'vi', 'da', 'po', 'ze', 'fu', 'ga', 'hi', 'jo', 'be']


def word_stats(count):
    """Word frequencies of LCG-made words; every 7th word is also tried as a number."""
    state = 42
    counts = {}
    failures = 0
    for i in xrange(count):
        state = lcg(state)
        word = SYLLABLES[state % 16] + SYLLABLES[(state >> 4) % 16] + SYLLABLES[(state >> 8) % 4]
        counts[word] = counts.get(word, 0) + 1
        if i % 7 == 0:
            try:
                int(word)
            except ValueError:
                failures += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top = ','.join('%s:%d' % kv for kv in ranked[:10])
    return top, len(counts), failures


def run():
    psum, hops, switched = simulate(PRODUCERS, PACKETS)
    top, distinct, failures = word_stats(WORDS)
    return 'queens=%d;primes=%d;sum=%d;hops=%d;switched=%s;distinct=%d;failures=%d;top=%s' % (
        queens(QUEENS), primes_below(PRIME_LIMIT), psum, hops, switched, distinct, failures, top)
