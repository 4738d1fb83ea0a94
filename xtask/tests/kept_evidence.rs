//! Kept evidence is checked evidence: a result an earlier run left is kept only while its
//! files are the indexed ones and its PASS comes out of its own log again, and no page
//! is made from a set that does not match its index. A forger's and a careless
//! operator's edits, on the fixture candidate.

mod common;

use common::fixture::*;
use common::{entry, xtask};
use xtask::evidence::schema::{self, Summary};
use xtask::kat::verify::Status;

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn an_edited_summary_is_dropped_and_run_again_and_pages_refuse_an_edited_set() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![("fix-16", 16, String::new()), ("fix-tweak", 16, "#define FIX_TWEAK 1\n".into())];
    write_tree(&tmp.path().join("tree"), &insts);
    let zip = tmp.path().join("Fixture KEM v1.zip");
    zip_tree(&tmp.path().join("tree"), &zip);
    let m = manifest_dir(&tmp.path().join("m"), &zip, false, &insts);
    let (out, cache, site) = (tmp.path().join("out"), tmp.path().join("cache"), tmp.path().join("site"));
    let verify = |extra: &[&str]| {
        let args = ["verify", s(&m), "--engine", "podman", "--archive", s(&zip), "--out", s(&out)];
        xtask(&[&args[..], extra].concat(), Some(&cache))
    };
    assert_eq!(verify(&[]).status.code(), Some(1), "fix-tweak is a MISMATCH");

    // The forger: MISMATCH made PASS, with the expected digest as the actual one.
    let path = common::layout(&out).kat_summary("fixture-kem");
    let mut forged: Summary = schema::read(&path).unwrap().unwrap();
    let e = forged.instances.iter_mut().find(|i| i.label == "fix-tweak").unwrap();
    (e.status, e.actual_sha256, e.message) = (Status::Pass, e.expected_sha256.clone(), None);
    schema::write(&path, &forged).unwrap();
    // Not indexed again: no page is made from it, and the file is named.
    for cmd in [vec!["site", s(&out), "--out", s(&site)], vec!["report", s(&m), "--out", s(&out)]] {
        let run = xtask(&cmd, None);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(err.contains("does not match its index") && err.contains("kat/fixture-kem/summary.json"), "{err}");
    }
    assert!(!site.join("index.html").exists());
    // A resumed run drops it with a warning and runs both again (their builds reused).
    let run = verify(&["--resume"]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("summary.json changed since it was indexed"), "{err}");
    assert_eq!(run.status.code(), Some(1));
    assert_eq!(entry(&common::summary(&out, "fixture-kem"), "fix-tweak").status, Status::Mismatch);

    // Forged again and indexed again, so `evidence check` is clean: the PASS is derived
    // from its own log, which gives another digest; fix-tweak runs again, fix-16 is kept.
    schema::write(&path, &forged).unwrap();
    assert!(xtask(&["evidence", "index", s(&out)], None).status.success());
    assert!(xtask(&["evidence", "check", s(&out)], None).status.success());
    let run = verify(&["--resume"]);
    let (stdout, err) = (common::stdout(&run), String::from_utf8_lossy(&run.stderr).into_owned());
    assert!(err.contains("fix-tweak: earlier result dropped") && err.contains("gives sha256"), "{err}");
    assert!(stdout.lines().any(|l| l.contains("fix-16") && l.contains("(kept, --resume)")), "{stdout}");
    assert!(stdout.lines().any(|l| l.contains("fix-tweak") && l.contains("MISMATCH")), "{stdout}");
    assert_eq!(run.status.code(), Some(1));
    let again = common::summary(&out, "fixture-kem");
    assert_eq!(entry(&again, "fix-tweak").status, Status::Mismatch);

    // One byte appended to a KAT log: `evidence check` fails, and so does `site`.
    let log = out.join(entry(&again, "fix-16").log.as_deref().unwrap());
    let mut text = std::fs::read(&log).unwrap();
    text.push(b'\n');
    std::fs::write(&log, text).unwrap();
    let run = xtask(&["site", s(&out), "--out", s(&site)], None);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains("changed: local/kat/fixture-kem/fix-16.log"), "{err}");
}
