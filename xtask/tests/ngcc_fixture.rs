//! The NGCC path end to end on a fixture candidate written for this project: an
//! archive in the official shape, built in the Debian 13 container with the harness's
//! own ICCS KAT driver. Expected digests come from a Rust model of the fixture's
//! arithmetic (below), never from running the C code.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod common;

use camino::Utf8Path;
use common::fixture::*;
use common::{entry, sha256, xtask};
use xtask::compile::sources::Provenance;
use xtask::container::systems::SystemProfile;
use xtask::evidence::schema::{self, SizeAudit, Summary};
use xtask::evidence::Layout;
use xtask::flags::Arch;
use xtask::kat::verify::Status;
use xtask::measure::sizes::Sizes;

fn statuses(out: &Path) -> Summary {
    common::summary(out, "fixture-kem")
}

#[test]
fn model_is_deterministic_and_mode_sensitive() {
    assert_eq!(model_lines(16), model_lines(16));
    assert_eq!(model_lines(16).len(), 10);
    assert_eq!(model_lines(16)[0].len(), 11);
    assert_ne!(model_digest(16, false, 10), model_digest(16, true, 10));
    assert_ne!(model_digest(16, false, 10), model_digest(16, false, 3));
}

/// One fixture tree, its archive and manifest, and an evidence folder.
struct Case {
    tmp: tempfile::TempDir,
    tree: PathBuf,
    root: PathBuf,
    zip: PathBuf,
    manifest: PathBuf,
    out: PathBuf,
    instances: Vec<Inst>,
}

impl Case {
    fn new() -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("tree");
        let instances = plain_instances();
        let root = write_tree(&tree, &instances);
        let zip = tmp.path().join("Fixture KEM v1.zip");
        zip_tree(&tree, &zip);
        let manifest = manifest_dir(&tmp.path().join("with patch"), &zip, true, &instances);
        let out = tmp.path().join("out");
        Case { tree, root, zip, manifest, out, instances, tmp }
    }
}

#[test]
fn fixture_archive_in_container_gives_every_status() {
    let c = Case::new();
    let _ = std::fs::remove_file("/tmp/ngcc-fixture-binary-was-run");
    refusals(&c);
    every_status(&c);
    bench_and_source_dir(&c);
    no_patch(&c);
}

fn refusals(c: &Case) {
    let (m, out_s, zip, tmp) = (c.manifest.to_str().unwrap(), c.out.to_str().unwrap(), &c.zip, &c.tmp);
    // Missing archive: an actionable message, nothing built.
    let missing = xtask(&["verify", m, "--engine", "podman", "--out", out_s], None);
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("Fixture KEM v1.zip") && err.contains("--archive PATH"), "{err}");

    // A tampered archive is refused before extraction (fresh cache stays empty).
    let bad_zip = tmp.path().join("tampered.zip");
    let mut bytes = std::fs::read(zip).unwrap();
    let last = bytes.len() - 30;
    bytes[last] ^= 1;
    std::fs::write(&bad_zip, bytes).unwrap();
    let cache = tmp.path().join("fresh-cache");
    let refused = xtask(
        &["verify", m, "--engine", "podman", "--out", out_s, "--archive", bad_zip.to_str().unwrap()],
        Some(&cache),
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("refusing"));
    // The refused copy is gone with the error: nothing is cached of it.
    let cached = std::fs::read_dir(cache.join("sources")).map_or(0, |d| d.count());
    assert_eq!(cached, 0, "nothing may be cached from a refused archive");
}

fn every_status(c: &Case) {
    let (m, out_s, zip, out) = (c.manifest.to_str().unwrap(), c.out.to_str().unwrap(), &c.zip, &c.out);
    // The real run: every status, in the container, three instances at a time (the
    // hanging one waits out its timeout beside the others).
    let archive = zip.to_str().unwrap();
    let run = xtask(
        &["verify", m, "--engine", "podman", "--out", out_s, "--archive", archive, "--timeout", "5", "--jobs", "3"],
        None,
    );
    assert!(!run.status.success(), "bad instances must fail the run");
    let s = statuses(out);
    assert_eq!(s.toolchain.gcc_version, "gcc (Debian 14.2.0-19) 14.2.0");
    assert!(matches!(s.source, Provenance::Archive { .. }));
    assert_eq!(s.patches[0].file, "0001-drop-error.patch");
    assert_eq!(s.patches[0].sha256.as_str(), sha256(PATCH.as_bytes()));
    for (label, want) in [
        ("fix-16", "PASS"),
        ("fix-32", "PASS"),
        ("fix-patch", "PASS"),
        ("fix-tweak", "MISMATCH"),
        ("fix-nokat", "NOKAT"),
        ("fix-failenc", "CRYPTOFAIL"),
        ("fix-overflow", "OVERFLOW"),
        ("fix-crash", "CRASH"),
        ("fix-hang", "TIMEOUT"),
        ("fix-malleable", "MISMATCH"),
    ] {
        assert_eq!(entry(&s, label).status.name(), want, "{label}");
    }
    tampered_ciphertexts(&s, &String::from_utf8_lossy(&run.stdout));
    // The host read each built library (never ran it): fix-32's also exports
    // `randombytes` (tests/fixture/exports.c), flagged; fix-16's exports the ICCS API
    // and DRNG names without a namespace, flagged as such, and no `randombytes`.
    let lib32 = entry(&s, "fix-32").library.as_ref().expect("fix-32 read");
    assert_eq!(lib32.error, None, "{lib32:?}");
    let flagged = |lib: &schema::LibraryElf, rule: &str| {
        lib.clashes.iter().find(|c| c.rule == rule).map(|c| c.symbols.clone()).unwrap_or_default()
    };
    assert_eq!(flagged(lib32, "randombytes"), ["randombytes"]);
    let size = lib32.size.expect("sizes");
    assert!(size.code > 0 && size.text > size.code && lib32.format == "ELF64 LSB x86-64", "{lib32:?}");
    let lib16 = entry(&s, "fix-16").library.as_ref().expect("fix-16 read");
    assert!(flagged(lib16, "randombytes").is_empty(), "{lib16:?}");
    assert!(flagged(lib16, "api").contains(&"kem_keygen".to_owned()), "{lib16:?}");
    assert!(flagged(lib16, "iccs-drng").contains(&"get_random_number".to_owned()), "{lib16:?}");
    // The guide set as the reference harness's guide builds used it (its KAT logs).
    let guide = "-std=c99 -Wpedantic -Wall -Wextra -O2 -fPIC -D_GNU_SOURCE -Wno-error=implicit-function-declaration \
        -Wno-error=incompatible-pointer-types -Wno-error=int-conversion -Wno-error=implicit-int";
    assert_eq!(entry(&s, "fix-16").flags.join(" "), guide);
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(text.contains("patched (0001-drop-error.patch sha256"), "{text}");
    assert!(text.contains("first differing record"), "{text}");
    assert!(text.contains("--- expected\n      Count = 0\n"), "{text}");
    // Messages name files inside the evidence set or the source tree, no folder of this machine.
    let summary = std::fs::read_to_string(common::layout(out).kat_summary("fixture-kem")).unwrap();
    assert!(summary.contains("(reference `fix-tweak/KAT/KAT_KEM_fix-tweak.txt` of the source tree)"));
    let cache = common::default_cache();
    for host in [out_s, cache.to_str().unwrap(), "target/ngcc-repro"] {
        assert!(!summary.contains(host), "summary.json names {host}");
    }
    // The never-compile files stayed out (their #error would have been a BUILDFAIL) and
    // the shipped binary was neither run nor left executable.
    assert!(!Path::new("/tmp/ngcc-fixture-binary-was-run").exists());
    let sha = sha256(&std::fs::read(zip).unwrap());
    let extracted = cache.join("sources").join(&sha).join(WRAP).join(ROOT).join("fix-16/prebuilt/kat_gen");
    assert_eq!(std::fs::metadata(&extracted).unwrap().permissions().mode() & 0o111, 0);
    // The patch went to a copy: the extracted original still has the #error line.
    let original = extracted.parent().unwrap().parent().unwrap().parent().unwrap().join("fix-patch/KEM_fix-patch.c");
    assert!(std::fs::read_to_string(original).unwrap().contains("#error"));
}

/// Every instance that built had its tampered ciphertexts decapsulated: the honest KEM's
/// answers are other secrets, the same on repeat; the one whose secret ignores the
/// ciphertext's last byte is named, with the byte, whatever its KAT status.
fn tampered_ciphertexts(s: &Summary, stdout: &str) {
    let t = |label: &str| entry(s, label).tampered.clone().unwrap_or_else(|| panic!("{label}: no tampered check"));
    let honest = t("fix-16");
    assert!(honest.holds() && honest.detail.contains("9 gave another secret"), "{honest:?}");
    assert_eq!(honest.seeds.len(), 3);
    let leaky = t("fix-malleable");
    assert_eq!(leaky.verdict, schema::CheckVerdict::Fails, "{leaky:?}");
    let want = "record 0, byte 15 flipped: dec returned the encapsulated secret for the tampered ciphertext";
    assert_eq!(leaky.detail, want);
    let row = stdout.lines().find(|l| l.trim_start().starts_with("fix-malleable")).unwrap_or_default();
    assert!(row.contains(" tampered ciphertexts: fails"), "{stdout}");
    assert!(stdout.contains(&format!("\n      {want}\n")), "{stdout}");
    // A crash in the tampered run is that run's verdict, not an engine failure.
    assert_eq!(t("fix-crash").verdict, schema::CheckVerdict::Fails);
}

fn bench_and_source_dir(c: &Case) {
    let (m, out_s, zip, out, tree, root) =
        (c.manifest.to_str().unwrap(), c.out.to_str().unwrap(), &c.zip, &c.out, &c.tree, &c.root);
    // Timing through the ICCS adapter; the fixture has no row in the size catalog,
    // and the size audit says so.
    let bench = xtask(
        &[
            "bench",
            m,
            "--engine",
            "podman",
            "--out",
            out_s,
            "--archive",
            zip.to_str().unwrap(),
            "--instance",
            "fix-32",
            "--quick",
            "--allow-unfixed-host",
            "--op",
            "enc",
        ],
        None,
    );
    assert!(bench.status.success());
    let rec = common::record(out, "fixture-kem", "fix-32", "enc");
    assert_eq!(rec.sizes.api, Sizes::of([("pk", 32), ("sk", 32), ("ct", 32), ("ss", 32)]));
    assert_eq!(rec.patches[0].file, "0001-drop-error.patch");
    let audit: SizeAudit = schema::read(&common::layout(out).size_audit("fixture-kem")).unwrap().unwrap();
    assert!(audit.disagreements.iter().any(|d| d.instance == "fix-32" && d.field == "row"), "{audit:?}");
    assert!(String::from_utf8_lossy(&bench.stdout).contains("fix-32: no row in the size catalog"));

    // The same fixture through --source-dir: unpinned directory with its tree digest.
    let dir_run = xtask(
        &[
            "verify",
            m,
            "--engine",
            "podman",
            "--out",
            out_s,
            "--source-dir",
            tree.to_str().unwrap(),
            "--instance",
            "fix-16",
            "--instance",
            "fix-32",
            "--instance",
            "fix-patch",
        ],
        None,
    );
    assert!(dir_run.status.success());
    let s = statuses(out);
    let Provenance::Directory { path, note, .. } = &s.source else { panic!("{:?}", s.source) };
    assert_eq!(note, "unpinned directory");
    // The tree by its own name: no folder of the measuring machine.
    assert_eq!(path, root.file_name().unwrap().to_str().unwrap());
    assert!(String::from_utf8_lossy(&dir_run.stdout).contains("unpinned directory"));
    // The page names no folder of this machine (the manifest lives in a temporary one).
    assert!(xtask(&["report", m, "--out", out_s], None).status.success());
    let page = std::fs::read_to_string(common::layout(out).report("fixture-kem")).unwrap();
    assert!(page.contains("`kat.sha256` outside the checkout (sha256 "), "{page}");
    assert!(!page.contains(c.tmp.path().to_str().unwrap()), "{page}");
    // The page shows fix-32's exported `randombytes` with why it clashes, and code size.
    let exports = &page[page.find("## Exported symbols").expect("the section")..];
    let row = exports.lines().find(|l| l.contains("| randombytes |")).unwrap_or_else(|| panic!("{exports}"));
    assert!(row.starts_with("| fix-32 | randombytes | the NIST API's randomness source"), "{row}");
    assert!(page.lines().any(|l| l.starts_with("| fix-32 | ") && l.ends_with(" | ELF64 LSB x86-64 |")), "{page}");
}

fn no_patch(c: &Case) {
    let (out_s, zip, out, tmp, instances) = (c.out.to_str().unwrap(), &c.zip, &c.out, &c.tmp, &c.instances);
    // Without the patch the shipped source does not compile: BUILDFAIL, no fallback.
    let m2 = manifest_dir(&tmp.path().join("no patch"), zip, false, instances);
    let no_patch = xtask(
        &[
            "verify",
            m2.to_str().unwrap(),
            "--engine",
            "podman",
            "--out",
            out_s,
            "--archive",
            zip.to_str().unwrap(),
            "--instance",
            "fix-patch",
        ],
        None,
    );
    assert!(!no_patch.status.success());
    let s = statuses(out);
    assert_eq!(entry(&s, "fix-patch").status, Status::Buildfail);
    assert!(String::from_utf8_lossy(&no_patch.stdout).contains("only compiles once the patch removes it"));
}

const X86_PATCH: &str = concat!(
    "Reason: x86intrin.h exists only on x86-64 and nothing here uses it\n",
    "Arch: aarch64\n",
    "--- a/fix-x86only/KEM_fix-x86only.c\n",
    "+++ b/fix-x86only/KEM_fix-x86only.c\n",
    "@@ -1,3 +1,2 @@\n",
    " #include \"KEM_fix-x86only.h\"\n",
    "-#include <x86intrin.h>\n",
    " /* Fixture KEM body; the test prepends `#include \"KEM_<label>.h\"`, which sets FIX_N and\n",
);

#[test]
fn an_aarch64_patch_leaves_the_x86_64_build_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let instances: Vec<Inst> = vec![("fix-x86only", 16, String::new())];
    write_tree(&tmp.path().join("tree"), &instances);
    let zip = tmp.path().join("Fixture KEM v1.zip");
    zip_tree(&tmp.path().join("tree"), &zip);
    // The same manifest twice: as shipped, and with the AArch64 patch beside it.
    let m = manifest_dir(&tmp.path().join("m"), &zip, false, &instances);
    let m_patched = manifest_dir(&tmp.path().join("m-patched"), &zip, false, &instances);
    let patches = m_patched.parent().unwrap().join("fixture-kem/patches");
    std::fs::write(patches.join("0001-aarch64-no-x86intrin.patch"), X86_PATCH).unwrap();
    let verify = |m: &Path, out: &str, arch: &str| {
        let args = ["verify", m.to_str().unwrap(), "--engine", "podman", "--archive", zip.to_str().unwrap()];
        let out = tmp.path().join(out);
        let run = xtask(&[&args[..], &["--arch", arch, "--out", out.to_str().unwrap()]].concat(), None);
        // A run off the profile's architecture has an evidence folder of its own.
        let arch = if arch == "aarch64" { Arch::Aarch64 } else { Arch::X86_64 };
        let folder = SystemProfile::load("local").unwrap().evidence_name(arch);
        let layout = Layout::new(Utf8Path::from_path(&out).unwrap(), &folder);
        (run.status.success(), schema::read::<Summary>(&layout.kat_summary("fixture-kem")).unwrap().unwrap())
    };
    // Each manifest on both architectures, the two manifests side by side (the emulated
    // builds are the long part).
    let (((ok, before), (arm_unpatched_ok, unpatched)), ((patched_ok, with_patch), (arm_ok, arm))) =
        std::thread::scope(|scope| {
            let plain = scope.spawn(|| (verify(&m, "x86-no-patch", "x86_64"), verify(&m, "arm-no-patch", "aarch64")));
            let patched = (verify(&m_patched, "x86-patch-present", "x86_64"), verify(&m_patched, "arm", "aarch64"));
            (plain.join().unwrap(), patched)
        });
    assert!(ok, "x86-64 builds the shipped code as it is");
    let x86only = |s: &Summary| entry(s, "fix-x86only").clone();
    assert!(patched_ok);
    assert_eq!(x86only(&with_patch).build_key, x86only(&before).build_key, "the x86-64 build is the same build");
    assert_eq!(x86only(&with_patch).library_sha256, x86only(&before).library_sha256);
    assert!(with_patch.patches.is_empty(), "a patch for AArch64 is not listed on x86-64");
    assert!(arm_ok, "AArch64 builds with the patch");
    assert_eq!(x86only(&arm).status, Status::Pass);
    assert_eq!(x86only(&arm).actual_sha256, x86only(&before).actual_sha256);
    assert_eq!(arm.patches[0].file, "0001-aarch64-no-x86intrin.patch");
    assert_eq!(arm.patches[0].arches, [Arch::Aarch64]);
    assert!(!arm_unpatched_ok);
    assert_eq!(x86only(&unpatched).status, Status::Buildfail, "without the patch AArch64 cannot build it");
}
