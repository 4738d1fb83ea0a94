//! What the NGCC field's manifests need, on the field fixture (tests/common/field.rs):
//! each need with the verdict the tool must reach.

use std::process::Command;

mod common;

use common::entry;
use common::field::Case;
use xtask::kat::verify::Status;

#[test]
fn the_fields_needs_build_and_pass_in_the_container() {
    let c = Case::new();
    let good = ["f-plain", "f-asm", "f-gmp", "f-arch", "f-100", "f-3", "f-known", "f-owndrng", "f-x86", "f-defsym"];
    // Two at a time: the parallel path, whose results must be those of one at a time.
    let mut args = vec!["--jobs", "2"];
    for l in good {
        args.extend(["--instance", l]);
    }
    let run = c.verify(&args);
    // The documented known failure is no finding: the run exits 0.
    assert_eq!(run.status.code(), Some(0), "{}", common::stdout(&run));
    let s = common::summary(&c.out, "field-kem");
    for l in good.iter().filter(|l| **l != "f-known") {
        assert_eq!(entry(&s, l).status, Status::Pass, "{l}: {:?}", entry(&s, l).message);
        assert!(entry(&s, l).known_issue.is_none(), "{l}");
    }
    let known = entry(&s, "f-known");
    assert_eq!(known.status, Status::Mismatch);
    assert!(known.known_issue.as_deref().is_some_and(|k| k.contains("FIX_TWEAK")), "{known:?}");
    // The official files came from the package, and every record says so.
    let plain = entry(&s, "f-plain");
    assert!(plain.commands[0].iter().any(|a| a == "/src/.ngcc-iccs/drng.c"), "{:?}", plain.commands[0]);
    assert!(plain.commands[0].iter().any(|a| a == "-lgmp"), "{:?}", plain.commands[0]);
    assert!(s.patches.iter().any(|p| p.file == "API_PKC.zip:drng.c"), "{:?}", s.patches);
    // The link-only flag reached the library's link and no driver's.
    let defsym = "-Wl,--defsym=fixture_alias_zero=fixture_asm_zero";
    let with: Vec<_> = entry(&s, "f-defsym").commands.iter().filter(|c| c.iter().any(|a| a == defsym)).collect();
    assert!(with.len() == 1 && with[0].iter().any(|a| a == "-shared"), "{with:?}");
    // 100 records replayed for f-100, 3 for f-3: the driver followed the manifest.
    assert!(entry(&s, "f-100").commands[1].iter().any(|a| a == "-DNGCC_KAT_RECORDS=100"));
    // The page names the known issue as a footnote beside the observed status.
    let report = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["report", c.manifest.to_str().unwrap(), "--out", c.out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let page = std::fs::read_to_string(common::layout(&c.out).report("field-kem")).unwrap();
    assert!(page.contains("| f-known | guide | MISMATCH [1] |"), "{page}");
    assert!(page.contains("[1] f-known: known issue, documented in the manifest"), "{page}");
    assert!(
        page.contains("Build flag sets: guide = `-std=c99 -Wpedantic -Wall -Wextra -O2 -fPIC -D_GNU_SOURCE"),
        "{page}"
    );

    // Per-instance limits: f-hang stops at its own 3 s, f-big at its own 1 MiB cap.
    let limits = c.verify(&["--instance", "f-hang", "--instance", "f-big"]);
    assert_eq!(limits.status.code(), Some(1));
    let s = common::summary(&c.out, "field-kem");
    let hang = entry(&s, "f-hang");
    assert_eq!(hang.status, Status::Timeout);
    assert!(hang.message.as_deref().is_some_and(|m| m.contains("timed out after 3 s")), "{hang:?}");
    assert_eq!(entry(&s, "f-big").status, Status::Outputlimit);
    // The command line wins over the manifest: with a larger cap f-big passes.
    let wider = c.verify(&["--instance", "f-big", "--output-cap-mib", "64"]);
    assert_eq!(wider.status.code(), Some(0));
    assert_eq!(entry(&common::summary(&c.out, "field-kem"), "f-big").status, Status::Pass);
}

/// `arch = ["x86_64"]`: under `--arch aarch64` the instance is not built, says why, and
/// is no failure (exit 0). Decided from the manifest before any image or archive work,
/// so this needs no AArch64 image (tests/aarch64.rs has a run that builds beside it).
#[test]
fn an_x86_only_instance_is_not_built_on_aarch64_and_that_is_no_failure() {
    let c = Case::new();
    // Without `Case::verify`'s podman check: the decision needs no engine at all.
    let archive = format!("field-kem={}", c.zip.display());
    let run = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["verify", c.manifest.to_str().unwrap(), "--engine", "podman", "--archive", &archive])
        .args(["--out", c.out.to_str().unwrap(), "--instance", "f-x86", "--arch", "aarch64"])
        .env("NGCC_REPRO_ICCS_API", &c.pin)
        .output()
        .unwrap();
    let out = common::stdout(&run);
    eprintln!("{out}{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(0), "{out}");
    assert!(out.contains("field-kem f-x86: not built: x86-64 only (manifest), on aarch64"), "{out}");
    assert!(!out.contains("BUILDFAIL"), "{out}");
    assert!(!c.out.join("local-aarch64/kat/field-kem/summary.json").exists(), "nothing recorded as a result");
}

#[test]
fn without_the_api_package_nothing_is_built_and_it_is_named() {
    let c = Case::new();
    std::fs::remove_file(&c.api).unwrap();
    let run = c.verify(&["--instance", "f-plain"]);
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("ICCS API package API_PKC.zip") && err.contains("iccs-api=PATH"), "{err}");
    assert!(!c.out.join("local/kat/field-kem/summary.json").exists());
}

#[test]
fn a_tampered_api_package_is_refused() {
    let c = Case::new();
    let mut bytes = std::fs::read(&c.api).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&c.api, bytes).unwrap();
    let run = c.verify(&["--instance", "f-plain"]);
    assert_ne!(run.status.code(), Some(0));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("refusing") && err.contains("ICCS API package is pinned"), "{err}");
}

/// `campaign --archives DIR`: archives found by digest under any name (the ICCS package
/// too) run, slow instances last with --defer, and the missing ones are listed with
/// file, size and SHA-256.
#[test]
fn a_campaign_over_a_folder_runs_what_is_there_and_lists_the_rest() {
    let c = Case::new();
    let dir = c.tmp.path().join("downloads");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&c.zip, dir.join("renamed archive.zip")).unwrap();
    std::fs::copy(&c.api, dir.join("api.bin")).unwrap();
    std::fs::write(dir.join("notes.txt"), "not an archive").unwrap();
    let m = c.manifest.to_str().unwrap();
    let args = ["--json", "campaign", m, "kem-07", "--engine", "podman", "--no-bench", "--defer", "--archives"];
    let mut args: Vec<&str> = args.to_vec();
    args.extend([dir.to_str().unwrap(), "--out", c.out.to_str().unwrap()]);
    let run =
        Command::new(env!("CARGO_BIN_EXE_xtask")).args(&args).env("NGCC_REPRO_ICCS_API", &c.pin).output().unwrap();
    let (out, err) = (common::stdout(&run), String::from_utf8_lossy(&run.stderr).into_owned());
    eprintln!("{out}{err}");
    // f-hang and f-big fail by design: a finding, not a tool failure.
    assert_eq!(run.status.code(), Some(1), "{err}");
    let report: xtask::evidence::schema::CampaignReport = serde_json::from_str(&out).unwrap();
    let want =
        "kem-07: BRQC.zip, 9739992 bytes, SHA-256 2c76bdd4e4df7829bf22fa4949a3c744b9af692425f6f2e5fae5317d41e366ae";
    assert!(report.missing.iter().any(|l| l.starts_with(want)), "{:?}", report.missing);
    let steps: Vec<&str> = report.steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(
        steps,
        ["image", "verify field-kem (all but the slow instances)", "verify field-kem (slow instances, deferred)"]
    );
    assert!(err.contains("archives of 1 of 2 candidates found"), "{err}");
    let s = common::summary(&c.out, "field-kem");
    assert_eq!(entry(&s, "f-plain").status, Status::Pass);
    assert_eq!(entry(&s, "f-hang").status, Status::Timeout);
}
