//! `AArch64` under qemu-user emulation on an x86-64 host (natively on an `AArch64` host):
//! the KAT digests match x86-64 byte for byte, and bench records say emulated.

mod common;

use common::{record, stdout, summary, xtask};
use xtask::flags::Arch;
use xtask::verify::Status;

#[test]
fn aarch64_kats_match_x86_64_and_emulated_timing_is_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let arm = tmp.path().join("arm");
    let x86 = tmp.path().join("x86");
    let run = xtask(
        &["verify", "pqclean-ml-kem", "--engine", "podman", "--arch", "aarch64", "--out", arm.to_str().unwrap()],
        None,
    );
    assert!(run.status.success());
    assert_eq!(stdout(&run).matches(" PASS ").count(), 3);
    let x = xtask(
        &["verify", "pqclean-ml-kem", "--engine", "podman", "--arch", "x86_64", "--out", x86.to_str().unwrap()],
        None,
    );
    assert!(x.status.success());

    let (a, b) = (summary(&arm, "pqclean-ml-kem"), summary(&x86, "pqclean-ml-kem"));
    assert_eq!(a.toolchain.arch, Arch::Aarch64);
    assert_eq!(a.toolchain.gcc_version, "gcc (Debian 14.2.0-19) 14.2.0");
    assert_eq!(a.toolchain.emulated, std::env::consts::ARCH != "aarch64");
    assert_ne!(a.toolchain.image_id, b.toolchain.image_id);
    for (i, j) in a.instances.iter().zip(&b.instances) {
        assert_eq!(i.status, Status::Pass);
        assert_eq!(i.actual_sha256, j.actual_sha256);
        let label = &i.label;
        let log =
            |root: &std::path::Path| std::fs::read(root.join(format!("local/kat/pqclean-ml-kem/{label}.log"))).unwrap();
        assert_eq!(log(&arm), log(&x86), "{label}: KAT text differs between architectures");
    }

    let bench = xtask(
        &[
            "bench",
            "pqclean-ml-kem",
            "--engine",
            "podman",
            "--arch",
            "aarch64",
            "--quick",
            "--instance",
            "ML-KEM-512",
            "--op",
            "enc",
            "--allow-unfixed-host",
            "--out",
            arm.to_str().unwrap(),
        ],
        None,
    );
    assert!(bench.status.success());
    let r = record(&arm, "pqclean-ml-kem", "ML-KEM-512", "enc");
    let emulated = std::env::consts::ARCH != "aarch64";
    assert_eq!(r.emulated, emulated);
    assert_eq!(r.timing_comparable, !emulated);
    compare_refuses_across_architectures(&x86, &arm);
    if emulated {
        assert!(stdout(&bench).contains("EMULATED, not a measurement"));
        // The page says why and shows no timing figures.
        let report = xtask(&["report", "pqclean-ml-kem", "--out", arm.to_str().unwrap()], None);
        assert!(report.status.success());
        let page = std::fs::read_to_string(arm.join("local/report/pqclean-ml-kem.md")).unwrap();
        let perf = &page[page.find("## 4. Performance").unwrap()..page.find("## 5.").unwrap()];
        assert!(perf.contains("not measurements of aarch64"), "{perf}");
        assert!(!perf.contains("µs") && !perf.contains(" ms"), "{perf}");
    }
}

/// The same operation timed on x86-64 and (emulated) AArch64: `compare` refuses and
/// names the differences; overridden, the page carries them.
fn compare_refuses_across_architectures(x86: &std::path::Path, arm: &std::path::Path) {
    let args = ["--engine", "podman", "--quick", "--instance", "ML-KEM-512", "--op", "enc", "--allow-unfixed-host"];
    let bench = xtask(&[&["bench", "pqclean-ml-kem"][..], &args, &["--out", x86.to_str().unwrap()]].concat(), None);
    assert!(bench.status.success());
    let (a, b) = (x86.to_str().unwrap(), arm.to_str().unwrap());
    let refused = xtask(&["compare", a, b], None);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    for d in ["architecture: x86_64 vs aarch64", "library sha256", "image", "--allow-differences"] {
        assert!(err.contains(d), "{d}: {err}");
    }
    let page_dir = x86.parent().unwrap().join("comparison");
    let allowed = xtask(&["compare", a, b, "--allow-differences", "--out", page_dir.to_str().unwrap()], None);
    assert!(allowed.status.success());
    let page = std::fs::read_to_string(page_dir.join("compare.md")).unwrap();
    assert!(
        page.contains("WARNING: compared with --allow-differences")
            && page.contains("- architecture: x86_64 vs aarch64")
    );
    assert!(page.contains("| pqclean-ml-kem | ML-KEM-512 | enc | "), "{page}");
    assert!(std::fs::read_to_string(page_dir.join("compare.html")).unwrap().contains("<svg"));
}
