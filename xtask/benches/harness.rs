//! Benchmarks of the timing harness itself (issue "Timing harness"): run with
//! `cargo bench -p xtask`. Needs podman and the Debian 13 image (built on demand).
//! Prints three ratios and fails when one misses its target:
//! 1. ML-KEM-768 keygen: `xtask bench` mean against a plain `clock_gettime` loop over the
//!    same library, in the same run (target within ±5 %);
//! 2. the same driver binary in the hardened sandbox and in a plain container (default
//!    seccomp profile, no limits) of the same image (target 1.00 ± 0.03);
//! 3. the empty operation against ML-KEM-512 encapsulation (target below 1 %).
//!
//! The library holds candidate code, so every reading runs in a container, never on the
//! host: the plain loop is compiled and run in the same image as the harness.

use std::path::{Path, PathBuf};
use std::process::Command;

use camino::Utf8Path;
use xtask::evidence::schema::{self, Record};
use xtask::evidence::Layout;
use xtask::measure::bench::DriverReport;

const CPU: &str = "1";

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn record(out: &Path, label: &str, op: &str) -> Record {
    let layout = Layout::new(Utf8Path::from_path(out).unwrap(), "local");
    schema::read(&layout.record("pqclean-ml-kem", label, op)).unwrap().expect("timing record")
}

/// Host folder of the build a record's driver was compiled into.
fn build_dir(r: &Record) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/ngcc-repro/builds/pqclean-ml-kem")
        .join(&r.build_key[..20])
        .join("out")
}

/// `argv` in a plain container of the record's image: the build folder read-only at
/// /b, the bench's scratch folder at /w, no network, the sandbox's user.
fn in_container(r: &Record, build: &Path, work: &Path, argv: &[&str]) -> String {
    let image = r.commands.image.as_deref().expect("a pinned image");
    let mut cmd = Command::new("podman");
    cmd.args(["--runtime", "runc", "run", "--rm", "--network=none", "--user", "65534"]);
    cmd.args(["--ulimit=nofile=1024:1024", "--ulimit=nproc=1024:1024"]);
    cmd.arg(format!("--volume={}:/b:ro", build.display())).arg(format!("--volume={}:/w", work.display()));
    run(cmd.arg(image).args(argv))
}

/// The plain loop, compiled in the image against the timed library.
fn compile_plain(r: &Record, build: &Path, work: &Path) {
    std::fs::create_dir_all(work).unwrap();
    std::fs::set_permissions(work, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/plain_keygen.c"), work.join("plain_keygen.c")).unwrap();
    let cc = ["gcc", "-O2", "-std=c99", "/w/plain_keygen.c", "-o", "/w/plain_keygen", "-L/b", "-linstance"];
    in_container(r, build, work, &[&cc[..], &["-Wl,-rpath,/b"]].concat());
}

/// ns per keygen of (1) the plain clock_gettime loop over the same library, same CPU,
/// same count, and (2) the very driver binary of the sandboxed run, in a plain container.
fn readings(r: &Record, build: &Path, work: &Path, iterations: &str) -> (f64, f64) {
    let n: f64 = iterations.parse().unwrap();
    let plain = ["taskset", "-c", CPU, "/w/plain_keygen", iterations];
    let plain_ns: f64 = in_container(r, build, work, &plain).trim().parse().unwrap();
    let text = in_container(r, build, work, &["/b/kem_bench", "keygen", iterations, "3", CPU]);
    let v: DriverReport = serde_json::from_str(&text).unwrap();
    (plain_ns / n, v.ns as f64 / v.iterations as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `xtask bench pqclean-ml-kem` on the benchmark CPU, into `out`.
fn bench(out: &Path, ops: &[&str], extra: &[&str]) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.args(["bench", "pqclean-ml-kem", "--engine", "podman", "--allow-unfixed-host", "--cpu", CPU]);
    cmd.args(["--out", out.to_str().unwrap()]).args(extra);
    for op in ops {
        cmd.args(["--op", op]);
    }
    print!("{}", run(&mut cmd));
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` lists benchmarks; nothing to list here
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let bench = |ops: &[&str], extra: &[&str]| bench(&out, ops, extra);
    // The machines are shared and noisy: measure in rounds, each round taking the
    // harness, the plain loop and the plain-container run of the same driver back to back, and
    // compare within a round.
    let mut r1 = Vec::new();
    let mut r2 = Vec::new();
    let mut fixed: Option<String> = None;
    for round in 0..21 {
        // One trial per round, so that the three readings of a round lie within a second.
        let mut args = vec!["--instance", "ML-KEM-768", "--trials", "1", "--trial-target", "0.1"];
        if let Some(n) = &fixed {
            args.extend(["--iterations", n.as_str()]);
        }
        bench(&["keygen"], &args);
        let k768 = record(&out, "ML-KEM-768", "keygen");
        let dir768 = build_dir(&k768);
        let iterations = k768.plan.iterations.to_string();
        fixed.get_or_insert(iterations.clone());
        let work = tmp.path().join("work");
        if !work.join("plain_keygen").exists() {
            compile_plain(&k768, &dir768, &work);
        }
        let harness_ns = k768.aggregate.mean_ns;
        let (plain_ns, host_ns) = readings(&k768, &dir768, &work, &iterations);
        let container_ns = k768.aggregate.median_trial_ns;
        println!(
            "round {round}: harness mean {harness_ns:.0} ns, plain loop {plain_ns:.0} ns; \
             sandbox median trial {container_ns:.0} ns, plain container {host_ns:.0} ns"
        );
        r1.push(harness_ns / plain_ns);
        r2.push(container_ns / host_ns);
    }
    let (r1m, r2m) = (median(r1.clone()), median(r2.clone()));
    bench(&["enc", "nop"], &["--instance", "ML-KEM-512"]);

    // 3. Harness overhead: the empty operation against ML-KEM-512 encapsulation.
    let nop = record(&out, "ML-KEM-512", "nop").aggregate.mean_ns;
    let enc = record(&out, "ML-KEM-512", "enc").aggregate.mean_ns;
    let r3 = nop / enc;

    println!("\nratio harness / plain loop, per round {r1:.4?}: median {r1m:.4}  (target 0.95..1.05)");
    println!("ratio sandbox / plain container, per round {r2:.4?}: median {r2m:.4}  (target 0.97..1.03)");
    println!("empty operation {nop:.2} ns, ML-KEM-512 enc {enc:.0} ns");
    println!("  overhead nop / enc              {:.5} %  (target < 1 %)", r3 * 100.0);
    let ok = (0.95..=1.05).contains(&r1m) && (0.97..=1.03).contains(&r2m) && r3 < 0.01;
    println!("{}", if ok { "all targets met" } else { "TARGET MISSED" });
    if !ok {
        std::process::exit(1);
    }
}
