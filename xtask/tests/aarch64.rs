//! `AArch64` under qemu-user emulation on an x86-64 host (natively on an `AArch64` host):
//! the KAT digests match x86-64 byte for byte (a KEM's, a hash function's four files and
//! a key exchange's 0 to 4 passes against the Rust models, with the key exchange's failing
//! verdicts), `ct` finds the fixture's planted leaks at their lines, and bench records
//! say emulated. That
//! `compare` refuses records of two architectures, and names them when overridden, is
//! tested on the golden evidence set (`tests/compare.rs`), without a bench here. An
//! instance restricted to x86-64 by its manifest is not built there, and that is no failure.

mod common;

use common::{stdout, xtask};
use xtask::container::systems::SystemProfile;
use xtask::evidence::schema::{self, Record, Summary};
use xtask::evidence::Layout;
use xtask::flags::Arch;
use xtask::kat::verify::Status;

/// The layout of `local` runs on `arch`: apart from the other architecture's evidence
/// (`local-aarch64` on an x86-64 host).
fn layout_of(out: &std::path::Path, arch: Arch) -> Layout {
    let name = SystemProfile::load("local").unwrap().evidence_name(arch);
    Layout::new(camino::Utf8Path::from_path(out).unwrap(), &name)
}

fn arm_layout(out: &std::path::Path) -> Layout {
    layout_of(out, Arch::Aarch64)
}

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
    // The arm64 image exists now: the hash fixture's emulated run goes beside the rest.
    let hash = std::thread::spawn(|| {
        hash_files_pass_on_aarch64();
        kex_verdicts_on_aarch64();
        ct_finds_the_planted_lines_on_aarch64();
    });
    let x = xtask(
        &["verify", "pqclean-ml-kem", "--engine", "podman", "--arch", "x86_64", "--out", x86.to_str().unwrap()],
        None,
    );
    assert!(x.status.success());

    let arm_summary: Summary = schema::read(&arm_layout(&arm).kat_summary("pqclean-ml-kem")).unwrap().unwrap();
    let x86_summary: Summary =
        schema::read(&layout_of(&x86, Arch::X86_64).kat_summary("pqclean-ml-kem")).unwrap().unwrap();
    let (a, b) = (arm_summary, x86_summary);
    assert_eq!(a.toolchain.arch, Arch::Aarch64);
    assert_eq!(a.toolchain.gcc_version, "gcc (Debian 14.2.0-19) 14.2.0");
    assert_eq!(a.toolchain.emulated, std::env::consts::ARCH != "aarch64");
    assert_ne!(a.toolchain.image_id, b.toolchain.image_id);
    for (i, j) in a.instances.iter().zip(&b.instances) {
        assert_eq!(i.status, Status::Pass);
        assert_eq!(i.actual_sha256, j.actual_sha256);
        let label = &i.label;
        let log = |l: Layout| std::fs::read(l.kat_log("pqclean-ml-kem", label)).unwrap();
        assert_eq!(
            log(arm_layout(&arm)),
            log(layout_of(&x86, Arch::X86_64)),
            "{label}: KAT text differs between architectures"
        );
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
    let r: Record = schema::read(&arm_layout(&arm).record("pqclean-ml-kem", "ML-KEM-512", "enc")).unwrap().unwrap();
    let emulated = std::env::consts::ARCH != "aarch64";
    assert_eq!(r.emulated, emulated);
    assert_eq!(r.timing_comparable, !emulated);
    if emulated {
        assert!(stdout(&bench).contains("EMULATED, not a measurement"));
        // The page says why and shows no timing figures.
        let report = xtask(&["report", "pqclean-ml-kem", "--arch", "aarch64", "--out", arm.to_str().unwrap()], None);
        assert!(report.status.success());
        let page = std::fs::read_to_string(arm_layout(&arm).report("pqclean-ml-kem")).unwrap();
        let perf = &page[page.find("## 4. Performance").unwrap()..page.find("## 5.").unwrap()];
        assert!(perf.contains("not measurements of AArch64"), "{perf}");
        assert!(!perf.contains("µs") && !perf.contains(" ms"), "{perf}");
        // Section 3 is the KAT of the very libraries timed: the AArch64 verify's.
        let kat = &page[page.find("## 3.").unwrap()..page.find("## 4.").unwrap()];
        assert!(kat.contains("| ML-KEM-512 | guide | PASS |"), "{kat}");
        let resources = &page[page.find("## 5.").unwrap()..page.find("## 6.").unwrap()];
        assert!(resources.contains("KiB (qemu-user)"), "{resources}");
    }

    hash.join().unwrap();
}

/// A hash function's four KAT files, the 1 GiB one included, against the Rust model (in
/// the KEM's test: one arm64 image).
fn hash_files_pass_on_aarch64() {
    let c = common::hash_fixture::Case::with(&common::hash_fixture::INSTANCES[..1]);
    let run = c.verify(&["--arch", "aarch64"]);
    assert_eq!(run.status.code(), Some(0));
    let s: Summary = schema::read(&arm_layout(&c.out).kat_summary(common::hash_fixture::ID)).unwrap().unwrap();
    let good = common::entry(&s, "h-good");
    assert_eq!(s.toolchain.arch, Arch::Aarch64);
    for part in common::hash_fixture::PARTS {
        let f = good.files.iter().find(|f| f.part == part).unwrap();
        assert_eq!(f.status, Some(Status::Pass), "{part}");
        assert_eq!(f.actual_sha256.as_ref().unwrap().as_str(), common::hash_fixture::kat_digest(part, 256), "{part}");
    }
}

/// The key-exchange fixture's passes and failing verdicts, digests from the Rust model.
fn kex_verdicts_on_aarch64() {
    use common::kex_fixture as kex;
    let labels = ["kex-p0", "kex-p4", "kex-disagree", "kex-msgover", "kex-unset", "kex-early"];
    let insts = kex::subset(&labels);
    let tmp = tempfile::tempdir().unwrap();
    let (_, zip) = kex::write_archive(tmp.path(), &insts);
    let m = kex::manifest_dir(&tmp.path().join("m"), &zip, &insts);
    let out = tmp.path().join("out");
    let args = ["verify", m.to_str().unwrap(), "--engine", "podman", "--arch", "aarch64", "--timeout", "300"];
    let run = xtask(&[&args[..], &["--out", out.to_str().unwrap(), "--archive", zip.to_str().unwrap()]].concat(), None);
    assert_eq!(run.status.code(), Some(1), "the failing instances fail the run");
    let s: Summary = schema::read(&arm_layout(&out).kat_summary(kex::ID)).unwrap().unwrap();
    assert_eq!(s.toolchain.arch, Arch::Aarch64);
    for i in &insts {
        let e = common::entry(&s, i.label);
        assert_eq!(e.status.name(), i.kat, "{}: {:?}", i.label, e.message);
        if i.kat == "PASS" {
            let published = kex::strict_digest(&i.published(), i.template);
            assert_eq!(e.actual_sha256.as_ref().map(|d| d.as_str()), Some(published.as_str()), "{}", i.label);
        }
    }
    let unset = common::entry(&s, "kex-unset").check.as_ref().unwrap();
    assert_eq!(unset.verdict, xtask::evidence::schema::CheckVerdict::Breach, "{}", unset.detail);
}

/// `ct` under emulation (valgrind's arm64 memcheck in the arm64 analysis image): the
/// planted branch and table index of the KEM fixture's dec, at their lines of
/// `ct_plant.h` (the twins are checked on x86-64, `tests/ct_fixture.rs`); no timing test.
fn ct_finds_the_planted_lines_on_aarch64() {
    use common::fixture::{manifest_dir, write_tree, zip_tree, Inst, FIXTURE};
    use xtask::evidence::schema::{CtKind, CtRecord};
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![("ct-leak", 16, "#define FIX_CT_LEAK 1\n".into())];
    write_tree(&tmp.path().join("tree"), &insts);
    let zip = tmp.path().join("Fixture KEM v1.zip");
    zip_tree(&tmp.path().join("tree"), &zip);
    let m = manifest_dir(&tmp.path().join("m"), &zip, false, &insts);
    let out = tmp.path().join("out");
    let (m, z, o) = (m.to_str().unwrap(), zip.to_str().unwrap(), out.to_str().unwrap());
    let args = ["ct", m, "--archive", z, "--engine", "podman", "--arch", "aarch64", "--out", o];
    let run = xtask(&[&args[..], &["--op", "dec", "--runs", "1"]].concat(), None);
    assert_eq!(run.status.code(), Some(1), "the planted leak is a finding");
    let r: CtRecord = schema::read(&arm_layout(&out).ct("fixture-kem", "ct-leak", "dec")).unwrap().unwrap();
    assert_eq!(r.toolchain.arch, Arch::Aarch64);
    let plant = std::fs::read_to_string(std::path::Path::new(FIXTURE).join("ct_plant.h")).unwrap();
    let line = |what: &str| plant.lines().position(|l| l.contains(&format!("ct-plant: {what}"))).unwrap() as u32 + 1;
    let mut seen: Vec<(CtKind, String, u32)> =
        r.findings.iter().map(|f| (f.kind, f.at.file.clone(), f.at.line)).collect();
    seen.sort();
    seen.dedup();
    let file = "ct-leak/ct_plant.h".to_owned();
    assert_eq!(seen, [(CtKind::Branch, file.clone(), line("branch")), (CtKind::Index, file, line("index"))]);
    // qemu's timings are not the architecture's: the timing test says so and measures nothing.
    let t = r.timing.expect("dec is always timed");
    assert_eq!((t.status, t.taken), (xtask::evidence::schema::CtTimingStatus::NotRun, 0));
    assert!(t.detail.unwrap_or_default().contains("emulation"));
}

/// `arch = ["x86_64"]` end to end under emulation: beside an instance that builds and
/// passes on AArch64, the x86-only one (an <immintrin.h> intrinsic and `bsr` inline
/// assembly) is "not built: x86-64 only (manifest)", has no result, and the run exits 0.
#[test]
fn an_x86_only_instance_is_not_built_beside_a_passing_one_on_aarch64() {
    let c = common::field::Case::new();
    let run = c.verify(&["--instance", "f-plain", "--instance", "f-x86", "--arch", "aarch64"]);
    let out = stdout(&run);
    assert_eq!(run.status.code(), Some(0), "{out}");
    assert!(out.contains("field-kem f-x86: not built: x86-64 only (manifest), on aarch64"), "{out}");
    let s: Summary = schema::read(&arm_layout(&c.out).kat_summary("field-kem")).unwrap().unwrap();
    assert_eq!(s.toolchain.arch, Arch::Aarch64);
    let labels: Vec<&str> = s.instances.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(labels, ["f-plain"], "the restricted instance is no result");
    assert_eq!(s.instances[0].status, Status::Pass);
}
