#!/usr/bin/env python3
"""Probe of the input readers (opt-in, not part of ctest): every number of the bundled scenario,
cluster and device files replaced by each value of a bad list, plus duplicate keys, traces and
command-line values, each run through the real binary; prints how many inputs ended how.

  tests/cli/probe_bad_inputs.py BUILD_DIR [--verbose]

Outcomes: "input error" = exit 2, one line, naming file:line and field (or a command-line
option); "exit 2 unlocated" = exit 2 without them; "accepted" = exit 0 (the value was valid);
"exit 1", "signal", "timeout" and "multi-line" are failures of the promise."""
import os, re, subprocess, sys, tempfile, json, collections

build = sys.argv[1]
verbose = '--verbose' in sys.argv
tandem = os.path.join(build, 'tandem')
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
work = tempfile.mkdtemp(prefix='tandem-probe-')
BAD = ['0', '-1', '4294967298', '99999999999999999999', '1e308', '1e-320', '.nan', '.inf', 'abc', '[1, 2]',
       '{a: 1}', '""', '2.5']
counts = collections.Counter()
failures = []


def run(args, timeout=20):
    try:
        p = subprocess.run([tandem] + args, capture_output=True, text=True, timeout=timeout, cwd=work)
    except subprocess.TimeoutExpired:
        return 'timeout', ''
    err = p.stderr
    if p.returncode < 0:
        return 'signal', err
    if p.returncode == 0:
        return 'accepted', err
    if p.returncode == 1:
        return 'exit 1', err
    lines = err.strip('\n').split('\n')
    if len(lines) != 1:
        return 'multi-line', err
    if p.returncode == 2 and (re.search(r':\d+: field \'', err) or 'command line' in err or
                              re.search(r'field \'[^\']+\'.*at byte', err)):
        return 'input error', err
    return 'exit 2 unlocated', err


def record(label, outcome, err):
    counts[outcome] += 1
    if outcome not in ('input error', 'accepted'):
        failures.append((label, outcome, err.strip()[:300]))
    if verbose:
        print(f'{outcome:16} {label}: {err.strip()[:160]}', flush=True)


def read(rel):
    with open(os.path.join(root, rel)) as f:
        return f.read()


def write(name, text):
    path = os.path.join(work, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


NUMBER = re.compile(r'^(\s*(?:- )?)([a-z_0-9]+):\s*(-?[0-9][0-9.e+-]*)\s*(#.*)?$')
INLINE = re.compile(r'([a-z_0-9]+): (-?[0-9][0-9.e+-]*)')


def mutations(text):
    """(label, mutated text) for each number of the file and each bad value, and duplicate keys."""
    lines = text.split('\n')
    for i, line in enumerate(lines):
        for m in INLINE.finditer(line):
            if line.lstrip().startswith('#'):
                continue
            for bad in BAD:
                new = line[:m.start(2)] + bad + line[m.end(2):]
                yield f'line {i + 1} {m.group(1)}={bad}', '\n'.join(lines[:i] + [new] + lines[i + 1:])
        top = re.match(r'^([a-z_]+):', line)
        if top:
            yield f'duplicate {top.group(1)}', '\n'.join(lines[:i + 1] + [line] + lines[i + 1:])
    yield 'second document', text + '\n---\nname: x\n'


def probe_file(kind, rel, make_args):
    text = read(rel)
    for label, bad in mutations(text):
        outcome, err = run(make_args(bad))
        record(f'{kind} {rel} {label}', outcome, err)


# Scenarios: simulate (search for the search file).
for rel, cmd in [('scenarios/gpt-tiny-localhost.yaml', ['simulate']),
                 ('scenarios/search-tiny-h100.yaml', ['search', '--workers', '1'])]:
    probe_file('scenario', rel, lambda bad, cmd=cmd: cmd + [write('scenario.yaml', bad)])

# Cluster and device: simulated through a scenario that names them by path.
scenario = read('scenarios/gpt-tiny-localhost.yaml').replace('cluster: localhost', 'cluster: cluster.yaml')
cluster = read('platforms/clusters/localhost.yaml').replace('device: cpu-generic', 'device: device.yaml')
device = read('platforms/devices/cpu-generic.yaml')
write('scenario.yaml', scenario)


def with_cluster(bad):
    write('cluster.yaml', bad)
    write('device.yaml', device)
    return ['simulate', os.path.join(work, 'scenario.yaml')]


def with_device(bad):
    write('cluster.yaml', cluster)
    write('device.yaml', bad)
    return ['simulate', os.path.join(work, 'scenario.yaml')]


probe_file('cluster', 'platforms/clusters/localhost.yaml', lambda bad: with_cluster(bad.replace('device: cpu-generic', 'device: device.yaml')))
probe_file('cluster', 'platforms/clusters/tiny-h100.yaml',
           lambda bad: ['simulate', write('s2.yaml', read('scenarios/search-tiny-h100.yaml').replace('cluster: tiny-h100', 'cluster: c2.yaml')),
                        ] if write('c2.yaml', bad) else [])
probe_file('device', 'platforms/devices/cpu-generic.yaml', with_device)

# Traces: compare a good trace with a mutated one.
good = os.path.join(work, 'good.json')
subprocess.run([tandem, 'simulate', 'gpt-tiny-localhost', '--trace', good], capture_output=True, cwd=work)
trace = json.load(open(good))
for field in ['rank', 'iteration', 'op_id', 'kind', 'phase', 'stream', 'start_s', 'end_s', 'flops', 'bytes', 'peer',
              'group_id', 'group_size']:
    for bad in [-1, 4294967297, 1e300, 'x', [1], None, 2.5, {'a': 1}]:
        t = json.loads(json.dumps(trace))
        t['records'][3][field] = bad
        outcome, err = run(['compare', good, write('bad.json', json.dumps(t, indent=1))])
        record(f'trace records[3].{field}={bad}', outcome, err)
for label, text in [('empty', ''), ('list', '[]'), ('number overflow', '{"records": [], "x": 1e400}'),
                    ('truncated', open(good).read()[:500]), ('schema', '{"schema": 1}')]:
    outcome, err = run(['compare', good, write('bad.json', text)])
    record(f'trace {label}', outcome, err)

# Non-regular files.
os.mkfifo(os.path.join(work, 'fifo.yaml'))
for args in [['simulate', '/dev/zero'], ['simulate', os.path.join(work, 'fifo.yaml')], ['compare', '/dev/zero', good],
             ['simulate', work]]:
    outcome, err = run(args, timeout=10)
    record(' '.join(args), outcome, err)

# Command-line values.
for option in ['--iterations', '--warmup']:
    for bad in ['0', '-1', '4294967297', 'nan', '1e3', 'x']:
        outcome, err = run(['simulate', 'gpt-tiny-localhost', option, bad])
        record(f'simulate {option} {bad}', outcome, err)
for option in ['--top', '--max-evaluations', '--workers']:
    for bad in ['-1', '4294967297', 'x']:
        outcome, err = run(['search', 'search-tiny-h100', option, bad])
        record(f'search {option} {bad}', outcome, err)
for bad in ['0', 'nan', 'inf', '1e308', '-5']:
    outcome, err = run(['run', 'gpt-tiny-localhost', '--timeout', bad, '--iterations', '1'])
    record(f'run --timeout {bad}', outcome, err)

print(f'{sum(counts.values())} inputs:')
for outcome, n in counts.most_common():
    print(f'  {n:5}  {outcome}')
for label, outcome, err in failures:
    print(f'{outcome}: {label}: {err}')
