#!/usr/bin/env python3
"""Opt-in check of `tandem run --elastic` (issue 15): N random SIGKILLs of a rank process, N recoveries.

  tests/cli/elastic_kill_loop.py BUILD_DIR [--kills 20] [--seed 1] [--shrink]

Trains gpt-tiny-localhost (data parallel over 2 ranks as processes) with a checkpoint every 5
iterations and as many spares as kills; each time a random rank of the running job passes a
random iteration, it is killed with SIGKILL. With --shrink there are no spares: each kill shrinks
the job to one rank, which grows back to two 10 iterations later (--repair-after 10), and the next
kill strikes the regrown job. Prints each failure's detection latency (the kill
to the supervisor's detection), restart time and iterations lost, and compares the stitched loss
curve with an uninterrupted run (ranks as threads). Exit 1 when a kill was not recovered, the run
hung (10 minutes), or a loss differs by more than 2e-4. Prints the simulator's prediction of each
recovery against the measured one as well (not a pass condition: a timing).
"""
import argparse, json, os, random, signal, subprocess, sys, tempfile, time

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shrink", action="store_true")
    a = ap.parse_args()
    tandem = os.path.join(a.build, "tandem")
    rng = random.Random(a.seed)
    iterations = 60 * (a.kills + 2)
    work = tempfile.mkdtemp(prefix="tandem-kill-loop-")
    ck = os.path.join(work, "ck.bin")
    out = os.path.join(work, "out.json")
    spares = ["--repair-after", "10"] if a.shrink else ["--spares", str(a.kills)]
    sup = subprocess.Popen([tandem, "run", "gpt-tiny-localhost", "--elastic", "--checkpoint", ck, "--checkpoint-every", "5",
                            "--iterations", str(iterations), "--json", out] + spares,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kills = []
    start = time.time()
    for k in range(a.kills):
        # With --shrink, job 2k is the full one (2k+1 shrunk, 2k+2 regrown).
        job_dir = os.path.join(ck + ".elastic", "heartbeats-%d" % (2 * k if a.shrink else k))
        rank = rng.randrange(2)
        # somewhere in the job's next stretch of iterations
        target = None
        while time.time() - start < 600:
            beat = os.path.join(job_dir, "rank%d" % rank)
            try:
                pid, nxt = map(int, open(beat).read().split())
            except (OSError, ValueError):
                time.sleep(0.002); continue
            if target is None: target = nxt + rng.randrange(3, 40)
            if nxt >= target:
                os.kill(pid, signal.SIGKILL); kills.append((time.time(), rank, nxt)); break
            time.sleep(0.002)
    try:
        sup.wait(timeout=max(60, 600 - (time.time() - start)))
    except subprocess.TimeoutExpired:
        sup.kill(); print("HANG: the supervisor did not finish"); return 1
    acc = json.load(open(out))
    ref = json.loads(subprocess.run([tandem, "run", "gpt-tiny-localhost", "--iterations", str(iterations), "--json", "-"],
                                    capture_output=True, text=True, check=True).stdout)["iterations"]
    worst = max(abs(l["loss"] - ref[l["iteration"]]["loss"]) for l in acc["losses"])
    fails = acc["failures"]
    regrowths = acc.get("regrowths", [])
    ok = len(fails) == len(kills) and len(acc["losses"]) == iterations and worst <= 2e-4
    print("kills %d, failures recovered %d, jobs %d, losses %d of %d, largest loss difference %.2g" %
          (len(kills), len(fails), len(acc["jobs"]), len(acc["losses"]), iterations, worst))
    lat = sorted(f["detected_at_unix_s"] - t for f, (t, _, _) in zip(fails, kills))
    rs = sorted(f["restart_s"] for f in fails)
    lost = [f["lost_iterations"] for f in fails]
    if fails:
        print("detection latency ms: median %.1f, max %.1f" % (1e3 * lat[len(lat) // 2], 1e3 * lat[-1]))
        print("restart s (detection -> ranks ready at the checkpoint): median %.2f, max %.2f" % (rs[len(rs) // 2], rs[-1]))
        print("iterations lost per failure: mean %.1f, max %d" % (sum(lost) / len(lost), max(lost)))
        # The simulator's prediction of each recovery (detection -> back where the job failed).
        errs = sorted((f["predicted_recovered_s"] - f["recovered_s"]) / f["recovered_s"] for f in fails
                      if f["predicted_recovered_s"] >= 0 and f["recovered_s"] > 0)
        rec = sorted(f["recovered_s"] for f in fails)
        stops = sorted(f["stop_s"] for f in fails)
        if errs:
            print("recovery s (detection -> back at the failed iteration): median %.2f measured; predicted minus measured: "
                  "median %+.1f%%, range %+.1f%%..%+.1f%% (%d of %d within 20%%)" %
                  (rec[len(rec) // 2], 100 * errs[len(errs) // 2], 100 * errs[0], 100 * errs[-1],
                   sum(abs(e) <= 0.2 for e in errs), len(errs)))
            print("stop s (detection -> the failed job's processes ended): median %.3f, max %.3f" %
                  (stops[len(stops) // 2], stops[-1]))
    print("ranks named right: %d of %d" % (sum(f["rank"] == r for f, (_, r, _) in zip(fails, kills)), len(kills)))
    if regrowths:
        errs = sorted((g["predicted_restart_s"] - g["restart_s"]) / g["restart_s"] for g in regrowths if g["restart_s"] > 0)
        print("regrowths %d: restart median %.2f s, predicted minus measured median %+.1f%% (%+.1f%%..%+.1f%%)" %
              (len(regrowths), sorted(g["restart_s"] for g in regrowths)[len(regrowths) // 2], 100 * errs[len(errs) // 2],
               100 * errs[0], 100 * errs[-1]))
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
