//! End-to-end: `cargo xtask verify pqclean-ml-kem` against `PQClean`'s published digests,
//! in the Debian 13 container and on the host. Needs podman (installed by .ci/run).

mod common;

use common::{sha256, stdout, summary};
use xtask::container::engine::{Backend, Engine};
use xtask::evidence::schema::Summary;
use xtask::kat::verify::Status;

fn xtask(args: &[&str]) -> std::process::Output {
    common::xtask(args, None)
}

const PUBLISHED: [(&str, &str); 3] = [
    ("ML-KEM-512", "c70041a761e01cd6426fa60e9fd6a4412c2be817386c8d0f3334898082512782"),
    ("ML-KEM-768", "5352539586b6c3df58be6158a6250aeff402bd73060b0a3de68850ac074c17c3"),
    ("ML-KEM-1024", "f580d851e5fb27e6876e5e203fa18be4cdbfd49e05d48fec3d3992c8f43a13e6"),
];

fn assert_all_pass(s: &Summary) {
    assert_eq!(s.instances.len(), 3);
    for (inst, (label, sha)) in s.instances.iter().zip(PUBLISHED) {
        assert_eq!(inst.label, label);
        assert_eq!(inst.status, Status::Pass);
        assert_eq!(inst.actual_sha256.as_ref().unwrap().as_str(), sha);
    }
}

#[test]
fn container_verify_passes_reuses_and_detects_mismatch() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();

    let run = xtask(&["verify", "pqclean-ml-kem", "--engine", "podman", "--out", out_s]);
    assert!(run.status.success());
    assert_eq!(stdout(&run).matches(" PASS ").count(), 3);
    let s = summary(&out, "pqclean-ml-kem");
    assert_all_pass(&s);
    assert_eq!(s.toolchain.toolchain, "debian-13");
    assert!(s.toolchain.pinned);
    assert_eq!(s.toolchain.engine, Backend::Container(Engine::Podman));
    assert_eq!(s.toolchain.gcc_version, "gcc (Debian 14.2.0-19) 14.2.0");
    assert_eq!(s.toolchain.cmake_version, "cmake version 3.31.6");
    assert_eq!(s.toolchain.image_id.as_ref().unwrap().len(), 64);
    assert_eq!(s.source.digest(), "eb14d207f3749e8a59a026c22ceaa72d70fff931cfbf4c8d9b08f3fc56dc6e60");
    // The KAT log is the program's output itself: its digest is the published one.
    let log = std::fs::read(out.join("local/kat/pqclean-ml-kem/ML-KEM-512.log")).unwrap();
    assert_eq!(sha256(&log), PUBLISHED[0].1);

    // Unchanged inputs: the image and every build are reused.
    let again = xtask(&["verify", "pqclean-ml-kem", "--engine", "podman", "--out", out_s]);
    assert!(again.status.success());
    assert_eq!(stdout(&again).matches("(build reused)").count(), 3);
    assert!(String::from_utf8_lossy(&again.stderr).contains("reused"));

    // One changed expected digest: MISMATCH, both digests printed, non-zero exit.
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../kat/pqclean-ml-kem/kat.sha256")).unwrap();
    let wrong = "0".repeat(64);
    let changed = manifest.replace(PUBLISHED[1].1, &wrong);
    assert_ne!(changed, manifest);
    let path = tmp.path().join("kat.sha256");
    std::fs::write(&path, changed).unwrap();
    let with_manifest = |extra: &[&str]| {
        let mut args = vec!["verify", "pqclean-ml-kem", "--engine", "podman", "--out", out_s];
        args.extend(["--kat-manifest", path.to_str().unwrap()]);
        args.extend(extra);
        xtask(&args)
    };
    let bad = with_manifest(&[]);
    assert!(!bad.status.success());
    let text = stdout(&bad);
    assert!(text.contains("ML-KEM-768") && text.contains("MISMATCH"), "{text}");
    assert!(text.contains(&format!("expected sha256 {wrong}")), "{text}");
    assert!(text.contains(&format!("actual   sha256 {}", PUBLISHED[1].1)), "{text}");
    assert_eq!(text.matches(" PASS ").count(), 2);

    // A label missing from the manifest is NOKAT, not a pass.
    let partial: String = manifest.lines().filter(|l| !l.contains("ML-KEM-1024")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, partial).unwrap();
    let nokat = with_manifest(&["--instance", "ML-KEM-1024"]);
    assert!(!nokat.status.success());
    assert!(stdout(&nokat).contains("NOKAT"));

    // The image matches its pins.
    let check = xtask(&["image", "check", "debian-13", "--engine", "podman"]);
    assert!(check.status.success());
    assert!(stdout(&check).contains("gcc      gcc (Debian 14.2.0-19) 14.2.0"));
}

#[test]
fn host_engine_passes_the_pinned_crate_and_says_unpinned_and_unsandboxed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // A pinned crate needs no --unsandboxed-host.
    let run = xtask(&["verify", "pqclean-ml-kem", "--engine", "host", "--out", out.to_str().unwrap()]);
    assert!(run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("WARNING"));
    assert_eq!(stdout(&run).matches("host (unpinned, unsandboxed) PASS").count(), 3);
    let s = summary(&out, "pqclean-ml-kem");
    assert_all_pass(&s);
    assert_eq!(s.toolchain.toolchain, "host (unpinned, unsandboxed)");
    assert!(!s.toolchain.pinned);
    assert_eq!(s.toolchain.image_id, None);
}

#[test]
fn docker_engine_verifies_against_the_published_digests() {
    let ok = std::process::Command::new("docker").arg("info").output().is_ok_and(|o| o.status.success());
    assert!(ok, "docker does not answer here: `cargo xtask doctor --engine docker` lists what to do");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let run = xtask(&["verify", "pqclean-ml-kem", "--engine", "docker", "--out", out.to_str().unwrap()]);
    assert!(run.status.success());
    let s = summary(&out, "pqclean-ml-kem");
    assert_all_pass(&s);
    assert_eq!(s.toolchain.engine, Backend::Container(Engine::Docker));
    assert_eq!(s.toolchain.gcc_version, "gcc (Debian 14.2.0-19) 14.2.0");
    let check = xtask(&["image", "check", "debian-13", "--engine", "docker"]);
    assert!(check.status.success());
    assert!(stdout(&check).contains(".docker.lock.json"));
}

/// PQClean's published `nistkat-sha256` of ML-DSA (`crypto_sign/ml-dsa-*/META.yml`).
const PUBLISHED_DSA: [(&str, &str); 3] = [
    ("ML-DSA-44", "9a196e7fb32fbc93757dc2d8dc1924460eab66303c0c08aeb8b798fb8d8f8cf3"),
    ("ML-DSA-65", "7cb96242eac9907a55b5c84c202f0ebd552419c50b2e986dc2e28f07ecebf072"),
    ("ML-DSA-87", "4537905d2aabcf302fab2f242baed293459ecda7c230e6a67063b02c7e2840ed"),
];

/// The embedded signature reference: 3 × PASS against PQClean's digests, each with a
/// verify contract that holds on messages drawn at run time; then one signing timed
/// through the NIST adapter, with the signature lengths it returned.
#[test]
fn container_verify_of_the_signature_reference_passes_with_its_contract() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let run = xtask(&["verify", "pqclean-ml-dsa", "--engine", "podman", "--out", out_s]);
    assert!(run.status.success(), "{}", stdout(&run));
    let s = summary(&out, "pqclean-ml-dsa");
    for (inst, (label, sha)) in s.instances.iter().zip(PUBLISHED_DSA) {
        assert_eq!((inst.label.as_str(), inst.status), (label, Status::Pass));
        assert_eq!(inst.actual_sha256.as_ref().unwrap().as_str(), sha);
        let check = inst.check.as_ref().expect("a verify contract");
        assert!(check.check == "verify contract" && check.holds(), "{label}: {check:?}");
        assert_eq!(check.seeds.len(), 4, "{label}: four records on run-time inputs");
    }
    let bench = ["bench", "pqclean-ml-dsa", "--engine", "podman", "--out", out_s, "--quick", "--allow-unfixed-host"];
    let timed = xtask(&[&bench[..], &["--instance", "ML-DSA-44", "--op", "sign"]].concat());
    assert!(timed.status.success(), "{}", stdout(&timed));
    let r = common::record(&out, "pqclean-ml-dsa", "ML-DSA-44", "sign");
    let lengths = r.out_len.expect("signature lengths");
    assert_eq!((lengths.min, lengths.max), (2420, 2420));
    assert!(lengths.count >= r.aggregate.n as u64, "every timed call counted");
    assert_eq!(r.sizes.api.get("sig"), 2420);
    assert_eq!(r.failed_attempts, 0);
    // The family decides the operations: a KEM's are refused before anything runs.
    let wrong = xtask(&[&bench[..], &["--op", "enc"]].concat());
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("keygen, sign, verify, sign_msgs, nop"));
}
