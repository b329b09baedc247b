#!/usr/bin/env python3
"""Probe of the input readers (opt-in, not part of ctest): every number of the bundled scenario,
cluster and device files replaced by each value of a bad list, plus duplicate keys, traces and
command-line values, each run through the real binary; prints how many inputs ended how.

  tests/cli/probe_bad_inputs.py BUILD_DIR [--verbose]

Outcomes: "input error" = exit 2, one line, naming file:line and field (or a command-line
option); "exit 2 unlocated" = exit 2 without them; "accepted" = exit 0 (the value was valid);
"exit 1", "signal", "timeout" and "multi-line" are failures of the promise."""
import os, re, subprocess, sys, tempfile, json, collections

build = os.path.abspath(sys.argv[1])  # the probe runs tandem from a folder of its own
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
    # A refusal of a whole file (a FIFO, a device, a directory) has no line: its field is "(file)".
    if p.returncode == 2 and (re.search(r':\d+: field \'', err) or 'command line' in err or
                              re.search(r'field \'[^\']+\'.*at byte', err) or ": field '(file)'" in err):
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
# The cluster's host (node_groups[].host) as an offloading scenario builds it into the platform.
offload = ('name: offload-probe\nmodel: gpt2-124m\ncluster: c3.yaml\n'
           'training: {global_batch_size: 16, micro_batch_size: 2, seq_length: 1024, precision: bf16}\n'
           'strategy: {type: hybrid, data_parallel_size: 8, zero_stage: 1, offload_optimizer: true}\n')
probe_file('cluster (offload)', 'platforms/clusters/tiny-h100.yaml',
           lambda bad: ['simulate', write('s3.yaml', offload)] if write('c3.yaml', bad) else [])

# Traces: compare a good trace with a mutated one. A small tandem-trace/1 file written here (the
# schema of one object per record, which every reader version reads), so mutations name fields.
def trace_record(i):
    return {'rank': 0, 'iteration': 0, 'op_id': f'op{i}', 'kind': 'gemm', 'phase': 'forward', 'stream': 'compute',
            'start_s': float(i), 'end_s': i + 0.5, 'flops': 1e6, 'bytes': 1e3, 'peer': -1, 'group_id': -1,
            'group_size': 0}


trace = {'schema': 'tandem-trace/1', 'source': 'sim', 'scenario': 'probe', 'records': [trace_record(i) for i in range(6)]}
good = write('good.json', json.dumps(trace, indent=1))
for field in ['rank', 'iteration', 'op_id', 'kind', 'phase', 'stream', 'start_s', 'end_s', 'flops', 'bytes', 'peer',
              'group_id', 'group_size']:
    for bad in [-1, 4294967297, 1e300, 'x', [1], None, 2.5, {'a': 1}]:
        t = json.loads(json.dumps(trace))
        t['records'][3][field] = bad
        outcome, err = run(['compare', good, write('bad.json', json.dumps(t, indent=1))])
        record(f'trace records[3].{field}={bad}', outcome, err)
# Keys given twice: in a record, and at the top level (JSON parsers keep the last one silently).
def trace_text(records, head='"schema": "tandem-trace/1"'):
    return '{' + head + ', "records": [\n' + ',\n'.join(records) + '\n]}'


plain = [json.dumps(r) for r in trace['records']]
for field in ['rank', 'start_s', 'kind', 'op_id']:
    again = plain[:3] + [plain[3][:-1] + ', "%s": %s}' % (field, json.dumps(trace['records'][3][field]))] + plain[4:]
    outcome, err = run(['compare', good, write('bad.json', trace_text(again))])
    record(f'trace records[3] {field} given twice', outcome, err)
outcome, err = run(['compare', good, write('bad.json', trace_text(plain, '"schema": "tandem-trace/1", "schema": "x"'))])
record('trace schema given twice', outcome, err)
for label, text in [('empty', ''), ('list', '[]'), ('number overflow', '{"records": [], "x": 1e400}'),
                    ('truncated', open(good).read()[:500]), ('schema', '{"schema": 1}')]:
    outcome, err = run(['compare', good, write('bad.json', text)])
    record(f'trace {label}', outcome, err)

# Goodput estimates (tandem goodput --json) read by `report --goodput`: every number and the
# timeline's order.
estimate_path = os.path.join(work, 'goodput.json')
subprocess.run([tandem, 'goodput', 'goodput-gpt2-124m-straggler', '--horizon', '2d', '--trials', '5',
                '--json', estimate_path], capture_output=True, cwd=work)
estimate = json.load(open(estimate_path))
def report_goodput(doc):
    return run(['report', '--goodput', write('bad-goodput.json', json.dumps(doc, indent=1)), '-o',
                os.path.join(work, 'r.html')])
for path in [('horizon_s',), ('trials',), ('devices',), ('goodput', 'mean'), ('goodput', 'ci95_high'),
             ('effective_tokens_per_s', 'mean'), ('time_s', 'useful'), ('timeline', 1, 't_s'),
             ('timeline', 1, 'failures'), ('sweep', 'points', 0, 'goodput'), ('time_to_train', 'wall_s', 'mean')]:
    for bad in [-1, 4294967297, 1e300, 'x', None, [1]]:
        doc = json.loads(json.dumps(estimate))
        node = doc
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = bad
        except (KeyError, IndexError, TypeError):
            continue
        outcome, err = report_goodput(doc)
        record(f'goodput json {".".join(map(str, path))}={bad}', outcome, err)

# Checkpoints: resuming from damaged copies of a real one (each error names a field and a byte).
ck = os.path.join(work, 'ck.bin')
subprocess.run([tandem, 'run', 'gpt-tiny-localhost', '--iterations', '1', '--checkpoint', ck], capture_output=True, cwd=work)
data = open(ck, 'rb').read()
for label, bad in [('empty', b''), ('magic only', data[:8]), ('cut in the header', data[:40]),
                   ('cut in the payload', data[:len(data) // 2]), ('one payload bit flipped', data[:-20] + bytes([data[-20] ^ 1]) + data[-19:]),
                   ('a byte after the checksum', data + b'x'), ('a YAML file', b'name: x\n')]:
    with open(os.path.join(work, 'bad.ck'), 'wb') as f:
        f.write(bad)
    outcome, err = run(['run', 'gpt-tiny-localhost', '--iterations', '1', '--resume', os.path.join(work, 'bad.ck')])
    record(f'checkpoint {label}', outcome, err)

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

for option, bads in [('--steps', ['0', '4', '-1', '4294967297', 'nan', 'x']), ('--target-loss', ['0', '-1', 'nan', 'inf', '1e308', 'x']),
                     ('--variant', ['x', '=', 'a=b', 'a=gradient_compression: zip', 'a={', 'a=local_sgd_steps: 0']),
                     ('--corpus', ['/dev/zero', '/nonexistent', work])]:
    for bad in bads:
        outcome, err = run(['convergence', 'gpt-tiny-localhost', '--steps', '5', option, bad], timeout=30)
        record(f'convergence {option} {bad}', outcome, err)
for option, bad in [('--interval', 'soon'), ('--trials', '0'), ('--horizon', '1e300d')]:
    outcome, err = run(['goodput', 'goodput-gpt3-13b-shrink-replan', option, bad], timeout=30)
    record(f'goodput shrink-replan {option} {bad}', outcome, err)

print(f'{sum(counts.values())} inputs:')
for outcome, n in counts.most_common():
    print(f'  {n:5}  {outcome}')
for label, outcome, err in failures:
    print(f'{outcome}: {label}: {err}')
