//! `cargo xtask bench --quick` in the Debian 13 container: the record format, the
//! host gate, and figures checked against independent readings (readelf, the API).
//! Timing targets live in `cargo bench -p xtask`, not here.

mod common;

use common::{record, sha256, stdout, xtask};
use xtask::compile::sources::Provenance;
use xtask::evidence::schema::{Environment, Record};
use xtask::measure::sizes::{Basis, Sizes};

fn gate_failures() -> usize {
    let env = xtask(&["env", "--json", "--engine", "host", "--cpu", "0"], None);
    let env: Environment = serde_json::from_slice(&env.stdout).unwrap();
    env.gate.checks.iter().filter(|c| !c.ok).count()
}

/// Sum of the LOAD `MemSiz` column of `readelf -lW`, read independently of the tool.
fn readelf_load_bytes(path: &std::path::Path) -> u64 {
    let out = std::process::Command::new("readelf").arg("-lW").arg(path).output().expect("readelf (binutils)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("LOAD"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            u64::from_str_radix(f[5].trim_start_matches("0x"), 16).unwrap()
        })
        .sum()
}

/// One record of the quick run against what the test knows independently.
fn check_record(r: &Record, op: &str, failures: usize) {
    assert_eq!(r.op.name(), op);
    assert!(r.quick && !r.emulated && r.timing_comparable);
    assert_eq!(r.toolchain.gcc_version, "gcc (Debian 14.2.0-19) 14.2.0");
    assert_eq!(r.host_gate.overridden, failures > 0);
    // One gate, recorded once: the environment manifest says the same.
    assert_eq!(r.environment.gate, r.host_gate);
    assert_eq!(r.host_gate.checks.iter().filter(|c| !c.ok).count(), failures);
    // n is trials × iterations of the kept trials, and the mean is their total time over n.
    let kept: Vec<_> = r.trials.iter().filter(|t| !t.trial.replaced).collect();
    assert_eq!(kept.len(), 3);
    let n: u64 = kept.iter().map(|t| t.trial.iterations).sum();
    let ns: u64 = kept.iter().map(|t| t.trial.ns).sum();
    assert_eq!(r.aggregate.n, n);
    assert!((r.aggregate.mean_ns - ns as f64 / n as f64).abs() < 1e-6);
    assert!(n >= 9);
    // The container's seccomp filter lets perf_event_open through: where the kernel
    // allows user-space counting, a missing counter is the machine's, not the sandbox's.
    assert!(r.sandbox.perf_events);
    let paranoid: i32 =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap().trim().parse().unwrap();
    if paranoid <= 2 {
        let why = r.counter.cycles_unavailable.as_deref().unwrap_or("");
        assert!(!why.contains("permission denied"), "{why}");
    }
    // Sizes as ML-KEM-512's API reports them, and as the catalog has them.
    assert_eq!(r.sizes.api, Sizes::of([("pk", 800), ("sk", 1632), ("ct", 768), ("ss", 32)]));
    assert_eq!(r.sizes.external.as_ref().unwrap().basis, Basis::Encoded);
    // Memory: the library's PT_LOAD sizes as readelf reads them; peak >= baseline > 0.
    let lib = common::default_cache().join("builds/pqclean-ml-kem");
    let library = lib.join(&r.build_key[..20]).join("out/libinstance.so");
    assert_eq!(r.memory.static_image_bytes, readelf_load_bytes(&library));
    assert_eq!(r.library_sha256, sha256(&std::fs::read(&library).unwrap()));
    assert!(r.memory.baseline_rss_kib > 0 && r.memory.peak_rss_kib >= r.memory.baseline_rss_kib);
    assert!(matches!(r.source, Provenance::Crate { .. }));
    assert!(r.harness_commit.len() >= 40);
    assert_eq!(r.commands.trial[1], op);
}

#[test]
fn quick_bench_writes_traceable_records() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let base = ["bench", "pqclean-ml-kem", "--engine", "podman", "--quick", "--instance", "ML-KEM-512", "--cpu", "0"];

    // The gate refuses an unfixed host unless overridden.
    let failures = gate_failures();
    if failures > 0 {
        let refused = xtask(&[&base[..], &["--out", out_s]].concat(), None);
        assert!(!refused.status.success());
        assert!(String::from_utf8_lossy(&refused.stderr).contains("--allow-unfixed-host"));
        assert!(!out.join("local/records").exists());
    }

    let run = xtask(
        &[
            &base[..],
            &["--out", out_s, "--allow-unfixed-host", "--op", "keygen", "--op", "enc", "--op", "dec", "--op", "nop"],
        ]
        .concat(),
        None,
    );
    assert!(run.status.success());
    assert!(stdout(&run).contains("size audit: API sizes agree"));
    for op in ["keygen", "enc", "dec", "nop"] {
        check_record(&record(&out, "pqclean-ml-kem", "ML-KEM-512", op), op, failures);
    }

    // The page: the seed pages' sections, figures taken from the records.
    let report = xtask(&["report", "pqclean-ml-kem", "--out", out_s], None);
    assert!(report.status.success());
    let page = std::fs::read_to_string(out.join("local/report/pqclean-ml-kem.md")).unwrap();
    for section in [
        "## 1. Basic information",
        "## 2. Assessment environment",
        "## 3. Functional testing (KAT)",
        "## 4. Performance",
        "## 5. Resource consumption",
        "## 6. Transmission and storage overhead",
        "## 7. Raw evidence index",
    ] {
        assert!(page.contains(section), "{section}");
    }
    let n = record(&out, "pqclean-ml-kem", "ML-KEM-512", "enc").aggregate.n;
    assert!(page.contains("| ML-KEM-512 | enc | "), "{page}");
    assert!(page.contains(&format!("| {n} (3 × ")), "{page}");
    assert!(page.contains("| ML-KEM-512 | 800 | 1632 | 768 | 32 | encoded |"));
    assert!(page.contains("| ML-KEM-512 | timing enc | records/pqclean-ml-kem/ML-KEM-512__enc.json |"), "{page}");
    assert!(page.contains("Paths are relative to `local/`"), "{page}");
    let check = xtask(&["evidence", "check", out_s], None);
    assert!(check.status.success(), "the page is indexed with the rest");
}
