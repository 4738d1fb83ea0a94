//! Pages claim only what was checked, on golden evidence files: a verify on the host's
//! architecture and an (emulated) bench on the other, into the same `--out`, give two
//! pages; the other architecture's page shows no KAT result of the host's libraries,
//! and its memory figures are named as the emulator's. A KAT run of another library
//! than the one timed is not shown as that library's.

mod common;

use camino::{Utf8Path, Utf8PathBuf};
use xtask::container::systems::SystemProfile;
use xtask::evidence::schema::{self, Record, Summary};
use xtask::evidence::Layout;
use xtask::family::OpId;
use xtask::flags::Arch;

const ID: &str = "pqclean-ml-kem";

fn golden<T: schema::Evidence>(file: &str) -> T {
    let path = Utf8PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden")).join(file);
    schema::read(&path).unwrap().unwrap()
}

fn other_arch() -> Arch {
    if Arch::host() == Arch::X86_64 {
        Arch::Aarch64
    } else {
        Arch::X86_64
    }
}

/// Timing records of every instance and operation, of the libraries `sha` names.
fn write_records(layout: &Layout, arch: Arch, sha: &dyn Fn(&str) -> String) {
    std::fs::create_dir_all(layout.records_dir(ID)).unwrap();
    for label in ["ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"] {
        for op in ["keygen", "enc", "dec"].map(OpId::new) {
            let mut r: Record = golden("record.json");
            (r.label, r.op, r.library_sha256) = (label.into(), op.clone(), sha(label));
            let emulated = arch != Arch::host();
            (r.toolchain.arch, r.toolchain.emulated, r.emulated, r.timing_comparable) =
                (arch, emulated, emulated, !emulated);
            schema::write(&layout.record(ID, label, op.name()), &r).unwrap();
        }
    }
}

/// The host's verify (all PASS) into `layout`.
fn write_summary(layout: &Layout) -> Summary {
    let s: Summary = golden("summary.json");
    assert!(s.instances.iter().all(|i| i.status.name() == "PASS"));
    std::fs::create_dir_all(layout.kat_dir(ID)).unwrap();
    schema::write(&layout.kat_summary(ID), &s).unwrap();
    s
}

fn report(out: &Utf8Path, extra: &[&str]) -> std::process::Output {
    // As every run leaves it: indexed.
    xtask::evidence::write_index(out).unwrap();
    let run = common::xtask(&[&["report", ID, "--out", out.as_str()], extra].concat(), None);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    run
}

fn section<'a>(page: &'a str, from: &str, to: &str) -> &'a str {
    &page[page.find(from).unwrap()..page.find(to).unwrap()]
}

#[test]
fn a_page_of_another_architecture_shows_no_kat_of_the_hosts_libraries() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Utf8PathBuf::from_path_buf(tmp.path().join("out")).unwrap();
    let local = SystemProfile::load("local").unwrap();
    let (host, other) = (Layout::new(&out, &local.evidence_name(Arch::host())), other_arch());
    let summary = write_summary(&host);
    // The other architecture's bench: its own builds, its own folder.
    let apart = Layout::new(&out, &local.evidence_name(other));
    assert_ne!(apart.system_dir, host.system_dir, "evidence of two architectures in one folder");
    write_records(&apart, other, &|l| common::sha256(format!("{l} on {}", other.uname()).as_bytes()));

    report(&out, &["--arch", other.uname()]);
    let page = std::fs::read_to_string(apart.report(ID)).unwrap();
    assert!(page.contains(&format!("performance on {} (system local)", other.display())), "{page}");
    let kat = section(&page, "## 3.", "## 4.");
    assert!(!kat.contains("PASS") && kat.contains("No verify run"), "{kat}");
    let resources = section(&page, "## 5.", "## 6.");
    if other != Arch::host() {
        assert!(resources.contains("of the qemu-user process that ran the driver"), "{resources}");
        let rows: Vec<&str> = resources.lines().filter(|l| l.starts_with("| ML-KEM")).collect();
        assert_eq!(rows.len(), 9);
        assert!(rows.iter().all(|r| r.matches("KiB (qemu-user)").count() == 2), "{resources}");
    }

    // The host's page keeps its PASS ×3, and its memory figures are the library's.
    report(&out, &[]);
    let page = std::fs::read_to_string(host.report(ID)).unwrap();
    assert_eq!(section(&page, "## 3.", "## 4.").matches("| PASS |").count(), 3, "{page}");

    // Timing in the host's folder of one library the KAT run checked and two it did
    // not: only the checked one keeps its PASS in section 3.
    let sha_of = |l: &str| summary.instances.iter().find(|i| i.label == l).unwrap().library_sha256.clone().unwrap();
    write_records(&host, Arch::host(), &|l| if l == "ML-KEM-768" { sha_of(l) } else { "0".repeat(64) });
    report(&out, &[]);
    let page = std::fs::read_to_string(host.report(ID)).unwrap();
    let kat = section(&page, "## 3.", "## 4.");
    assert_eq!(kat.matches("| PASS |").count(), 1, "{kat}");
    assert!(kat.contains("| ML-KEM-768 | guide | PASS |"), "{kat}");
    assert_eq!(kat.matches("not shown: another library than the one timed").count(), 2, "{kat}");
    assert!(kat.contains("than sections 4–5 timed for ML-KEM-512, ML-KEM-1024"), "{kat}");
    assert!(!section(&page, "## 5.", "## 6.").contains("qemu-user"));
}
