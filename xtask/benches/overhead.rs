//! Time spent around the trials (issue 18, point 12): `cargo bench -p xtask --bench
//! overhead`. Needs podman and the Debian 13 image. Runs `xtask bench pqclean-ml-kem`
//! with the reference plan (builds made first, so the figure is a warm run's) and
//! prints the bench step's wall time against the time of its timing runs, as `bench`
//! prints it, and the whole command's wall time against the same runs read back from
//! the records; fails when the bench step's ratio is above the target, 1.10.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use camino::Utf8Path;
use xtask::evidence::schema::{self, Record};
use xtask::evidence::Layout;

const TARGET: f64 = 1.10;

fn bench(out: &Path) -> String {
    let args = ["bench", "pqclean-ml-kem", "--engine", "podman", "--allow-unfixed-host", "--out"];
    let o = Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).arg(out).output().expect("xtask bench");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "bench failed:\n{text}{}", String::from_utf8_lossy(&o.stderr));
    text
}

/// Seconds of every timing run of the records: calibration loops and trials' accounted time.
fn run_seconds(out: &Path) -> f64 {
    let layout = Layout::new(Utf8Path::from_path(out).unwrap(), "local");
    let mut ns = 0u64;
    for label in ["ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"] {
        for op in ["keygen", "enc", "dec"] {
            let r: Record = schema::read(&layout.record("pqclean-ml-kem", label, op)).unwrap().expect("record");
            ns += r.plan.calibration.iter().map(|c| c.ns).sum::<u64>();
            ns += r.trials.iter().map(|t| t.accounted_ns).sum::<u64>();
        }
    }
    ns as f64 / 1e9
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` lists benchmarks; nothing to list here
    }
    let tmp = tempfile::tempdir().unwrap();
    bench(&tmp.path().join("warm-up")); // builds and the trial runner, once
    let out = tmp.path().join("out");
    let t = Instant::now();
    let text = bench(&out);
    let wall = t.elapsed().as_secs_f64();
    let line = text.lines().find(|l| l.starts_with("wall ")).expect("bench prints its overhead line");
    let ratio: f64 = line.rsplit(": ").next().unwrap().trim_end_matches('×').parse().unwrap();
    let runs = run_seconds(&out);
    println!("bench step: {line}");
    println!("whole command: wall {wall:.1} s for {runs:.1} s of timing runs: {:.2}×", wall / runs);
    assert!(ratio <= TARGET, "the bench step takes {ratio:.2}× its timing runs (target {TARGET:.2}×)");
}
