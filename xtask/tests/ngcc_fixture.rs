//! The NGCC path end to end on a fixture candidate written for this project: an
//! archive in the official shape, built in the Debian 13 container with the harness's
//! own ICCS KAT driver. Expected digests come from a Rust model of the fixture's
//! arithmetic (below), never from running the C code.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

mod common;

use common::fixture::*;
use common::{sha256, xtask};

fn statuses(out: &Path) -> serde_json::Value {
    common::summary(out, "fixture-kem")
}

fn status_of<'a>(s: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    s["instances"].as_array().unwrap().iter().find(|i| i["label"] == label).unwrap()
}

#[test]
fn model_is_deterministic_and_mode_sensitive() {
    assert_eq!(model_lines(16), model_lines(16));
    assert_eq!(model_lines(16).len(), 10);
    assert_eq!(model_lines(16)[0].len(), 11);
    assert_ne!(model_digest(16, false, 10), model_digest(16, true, 10));
    assert_ne!(model_digest(16, false, 10), model_digest(16, false, 3));
}

#[test]
fn fixture_archive_in_container_gives_every_status() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let instances = plain_instances();
    let root = write_tree(&tree, &instances);
    let zip = tmp.path().join("Fixture KEM v1.zip");
    zip_tree(&tree, &zip);
    let m = manifest_dir(&tmp.path().join("with patch"), &zip, true, &instances);
    let m = m.to_str().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let _ = std::fs::remove_file("/tmp/ngcc-fixture-binary-was-run");

    // Missing archive: an actionable message, nothing built.
    let missing = xtask(&["verify", m, "--engine", "podman", "--out", out_s], None);
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("Fixture KEM v1.zip") && err.contains("--archive PATH"), "{err}");

    // A tampered archive is refused before extraction (fresh cache stays empty).
    let bad_zip = tmp.path().join("tampered.zip");
    let mut bytes = std::fs::read(&zip).unwrap();
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
    assert!(!cache.join("sources").exists(), "nothing may be extracted from a refused archive");

    // The real run: every status, in the container.
    let run = xtask(
        &["verify", m, "--engine", "podman", "--out", out_s, "--archive", zip.to_str().unwrap(), "--timeout", "5"],
        None,
    );
    assert!(!run.status.success(), "bad instances must fail the run");
    let s = statuses(&out);
    assert_eq!(s["toolchain"]["gcc_version"], "gcc (Debian 14.2.0-19) 14.2.0");
    assert_eq!(s["source"]["kind"], "archive");
    assert_eq!(s["patches"][0]["file"], "0001-drop-error.patch");
    assert_eq!(s["patches"][0]["sha256"], sha256(PATCH.as_bytes()));
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
    ] {
        assert_eq!(status_of(&s, label)["status"], want, "{label}");
    }
    assert_eq!(
        status_of(&s, "fix-16")["flags"],
        serde_json::json!(["-std=c99", "-Wpedantic", "-Wall", "-Wextra", "-O2"])
    );
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(text.contains("patched (0001-drop-error.patch sha256"), "{text}");
    assert!(text.contains("first differing record"), "{text}");
    assert!(text.contains("--- expected\n      Count = 0\n"), "{text}");
    // The never-compile files stayed out (their #error would have been a BUILDFAIL) and
    // the shipped binary was neither run nor left executable.
    assert!(!Path::new("/tmp/ngcc-fixture-binary-was-run").exists());
    let sha = sha256(&std::fs::read(&zip).unwrap());
    let extracted = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/ngcc-repro/sources")
        .join(&sha)
        .join(WRAP)
        .join(ROOT)
        .join("fix-16/prebuilt/kat_gen");
    assert_eq!(std::fs::metadata(&extracted).unwrap().permissions().mode() & 0o111, 0);
    // The patch went to a copy: the extracted original still has the #error line.
    let original = extracted.parent().unwrap().parent().unwrap().parent().unwrap().join("fix-patch/KEM_fix-patch.c");
    assert!(std::fs::read_to_string(original).unwrap().contains("#error"));

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
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("local/records/fixture-kem/fix-32__enc.json")).unwrap())
            .unwrap();
    assert_eq!(rec["sizes"]["api"], serde_json::json!({"pk": 32, "sk": 32, "ct": 32, "ss": 32}));
    assert_eq!(rec["patches"][0]["file"], "0001-drop-error.patch");
    let audit = std::fs::read_to_string(out.join("local/records/fixture-kem/size_audit.json")).unwrap();
    assert!(audit.contains("\"field\": \"row\""), "{audit}");
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
    let s = statuses(&out);
    assert_eq!(s["source"]["kind"], "directory");
    assert_eq!(s["source"]["note"], "unpinned directory");
    assert_eq!(s["source"]["path"], root.canonicalize().unwrap().to_str().unwrap());
    assert!(String::from_utf8_lossy(&dir_run.stdout).contains("unpinned directory"));

    // Without the patch the shipped source does not compile: BUILDFAIL, no fallback.
    let m2 = manifest_dir(&tmp.path().join("no patch"), &zip, false, &instances);
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
    let s = statuses(&out);
    assert_eq!(status_of(&s, "fix-patch")["status"], "BUILDFAIL");
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
    let m = manifest_dir(&tmp.path().join("m"), &zip, false, &instances);
    let verify = |out: &str, arch: &str| {
        let args = ["verify", m.to_str().unwrap(), "--engine", "podman", "--archive", zip.to_str().unwrap()];
        let out = tmp.path().join(out);
        let run = xtask(&[&args[..], &["--arch", arch, "--out", out.to_str().unwrap()]].concat(), None);
        (run.status.success(), statuses(&out))
    };
    let (ok, before) = verify("x86-no-patch", "x86_64");
    assert!(ok, "x86-64 builds the shipped code as it is");
    let entry = |s: &serde_json::Value| status_of(s, "fix-x86only").clone();
    let patches = m.parent().unwrap().join("fixture-kem/patches");
    std::fs::write(patches.join("0001-aarch64-no-x86intrin.patch"), X86_PATCH).unwrap();
    let (ok, with_patch) = verify("x86-patch-present", "x86_64");
    assert!(ok);
    assert_eq!(entry(&with_patch)["build_key"], entry(&before)["build_key"], "the x86-64 build is the same build");
    assert_eq!(entry(&with_patch)["library_sha256"], entry(&before)["library_sha256"]);
    assert_eq!(with_patch["patches"], serde_json::json!([]), "a patch for AArch64 is not listed on x86-64");
    let (ok, arm) = verify("arm", "aarch64");
    assert!(ok, "AArch64 builds with the patch");
    assert_eq!(entry(&arm)["status"], "PASS");
    assert_eq!(entry(&arm)["actual_sha256"], entry(&before)["actual_sha256"]);
    assert_eq!(arm["patches"][0]["file"], "0001-aarch64-no-x86intrin.patch");
    assert_eq!(arm["patches"][0]["arches"], serde_json::json!(["aarch64"]));
    std::fs::remove_file(patches.join("0001-aarch64-no-x86intrin.patch")).unwrap();
    let (ok, unpatched) = verify("arm-no-patch", "aarch64");
    assert!(!ok);
    assert_eq!(entry(&unpatched)["status"], "BUILDFAIL", "without the patch AArch64 cannot build it");
}
