//! `ct` on fixture instances written for this project: a KEM and a signature with a
//! planted secret-dependent branch and table index (`tests/fixture/ct_plant.h`), their
//! constant-time twins, and the hostile ones: a library that marks its secret defined
//! to hide the leak, one that prints forged report text on stdout and on fd 3, and one
//! that floods the report's stream.
//! Expected lines come from the markers in ct_plant.h, never from the tool.

mod common;

use std::path::Path;

use common::fixture::{manifest_dir, write_tree, zip_tree, Inst, FIXTURE};
use common::sig_fixture::{self, SigInst, VAR};
use common::xtask;
use xtask::evidence::schema::{self, CtKind, CtRecord, CtStatus};

/// Line of `ct_plant.h` that carries `ct-plant: <what>`.
fn planted(what: &str) -> u32 {
    let text = std::fs::read_to_string(Path::new(FIXTURE).join("ct_plant.h")).unwrap();
    let n = text.lines().position(|l| l.contains(&format!("ct-plant: {what}"))).expect("marker");
    n as u32 + 1
}

fn ct_record(out: &Path, id: &str, label: &str, op: &str) -> CtRecord {
    schema::read(&common::layout(out).ct(id, label, op)).unwrap().unwrap_or_else(|| panic!("{label} {op}: no record"))
}

/// The (kind, file, line) of each finding, in the candidate's tree.
fn places(r: &CtRecord) -> Vec<(CtKind, String, u32)> {
    let mut p: Vec<_> = r.findings.iter().map(|f| (f.kind, f.at.file.clone(), f.at.line)).collect();
    p.sort();
    p.dedup();
    p
}

fn expected(dir: &str) -> Vec<(CtKind, String, u32)> {
    let file = format!("{dir}/ct_plant.h");
    vec![(CtKind::Branch, file.clone(), planted("branch")), (CtKind::Index, file, planted("index"))]
}

fn run_ct(m: &Path, zip: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let (m, z, o) = (m.to_str().unwrap(), zip.to_str().unwrap(), out.to_str().unwrap());
    let base = ["ct", m, "--archive", z, "--engine", "podman", "--out", o, "--runs", "2", "--measurements", "4000"];
    xtask(&[&base[..], extra].concat(), None)
}

#[test]
fn kem_leaks_are_found_at_their_lines_and_the_twins_are_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![
        ("ct-leak", 16, "#define FIX_CT_LEAK 1\n".into()),
        ("ct-twin", 16, "#define FIX_CT_TWIN 1\n".into()),
        ("ct-hide", 16, "#define FIX_CT_HIDE 1\n".into()),
        ("ct-chatty", 16, "#define _DEFAULT_SOURCE 1\n#define FIX_CT_CHATTY 1\n".into()),
        ("ct-flood", 16, "#define _DEFAULT_SOURCE 1\n#define FIX_CT_FLOOD 1\n".into()),
        ("ct-slow", 16, "#define FIX_CT_SLOW 1\n".into()),
        ("ct-helper", 16, "#define _DEFAULT_SOURCE 1\n#define FIX_CT_HELPER 1\n".into()),
        ("ct-answer", 16, "#define FIX_CT_ANSWER 1\n".into()),
        ("ct-defer", 16, "#define FIX_CT_DEFER 1\n".into()),
        ("ct-public", 16, "#define FIX_CT_LEAK 1\n".into()),
        ("ct-chameleon", 16, "#define FIX_CT_CHAMELEON 1\n".into()),
    ];
    write_tree(&tmp.path().join("tree"), &insts);
    let zip = tmp.path().join("Fixture KEM v1.zip");
    zip_tree(&tmp.path().join("tree"), &zip);
    let m = manifest_dir(&tmp.path().join("m"), &zip, false, &insts);
    // ct-public's manifest says the three planted bytes of its key are public.
    let text = std::fs::read_to_string(&m).unwrap();
    let public = "label = \"ct-public\"\nct_public_sk = [{ from = 0, to = 3, why = \"the planted bytes\" }]\n";
    std::fs::write(&m, text.replace("label = \"ct-public\"\n", public)).unwrap();
    let out = tmp.path().join("out");
    let run = run_ct(&m, &zip, &out, &[]);
    assert_eq!(run.status.code(), Some(1), "findings are the command's failure");
    let id = "fixture-kem";

    // The leak: exactly the two planted lines, in dec (where the secret key is secret),
    // with ct_plant and kem_dec on the stack; keygen and enc poison the DRNG output and
    // find nothing in the fixture's hashing.
    let dec = ct_record(&out, id, "ct-leak", "dec");
    assert_eq!(dec.status, CtStatus::Findings);
    assert_eq!(places(&dec), expected("ct-leak"), "{:#?}", dec.findings);
    let f = &dec.findings[0];
    assert_eq!(f.at.function, "ct_plant");
    assert!(f.stack.iter().any(|s| s.function == "kem_dec" && s.file == "ct-leak/KEM_ct-leak.c"), "{:?}", f.stack);
    assert!(f.stack.iter().any(|s| s.file == "driver:kem_ct.c"), "the driver's frames are named as the harness's");
    assert_eq!(dec.secret_bytes, 2 * 2 * 16, "2 runs × (ciphertext, flipped ciphertext) × 16-byte key");
    for op in ["keygen", "enc"] {
        let r = ct_record(&out, id, "ct-leak", op);
        assert_eq!((r.status, r.random_bytes > 0), (CtStatus::NoneFound, true), "{op}: {:#?}", r.findings);
    }
    // The twin does the same work with a mask and a full scan: nothing.
    for op in ["keygen", "enc", "dec"] {
        let r = ct_record(&out, id, "ct-twin", op);
        assert_eq!(r.status, CtStatus::NoneFound, "ct-twin {op}: {:#?}", r.findings);
        assert_eq!(r.client_requests, 0);
    }
    // Hiding the secret from memcheck leaves no finding, but never a clean record.
    let hide = ct_record(&out, id, "ct-hide", "dec");
    assert!(hide.client_requests >= 1 && hide.status == CtStatus::Undetermined, "{hide:#?}");
    assert!(hide.detail.as_deref().unwrap_or_default().contains("client request"), "{:?}", hide.detail);
    // Forged report text on stdout and fd 3: the leak is still reported, or the run failed.
    let chatty = ct_record(&out, id, "ct-chatty", "dec");
    match chatty.status {
        CtStatus::Findings => assert_eq!(places(&chatty), expected("ct-chatty")),
        CtStatus::Failed => assert!(chatty.detail.is_some()),
        other => panic!("ct-chatty dec: {other:?} {:?}", chatty.detail),
    }
    // 80 MiB into the report's stream: past the cap, a failed run, never a clean one.
    let flood = ct_record(&out, id, "ct-flood", "dec");
    assert_eq!(flood.status, CtStatus::Failed, "{:?}", flood.detail);
    // Declassified by the manifest: the leak is on public bytes, so no finding, and the
    // record says which bytes and why.
    let public = ct_record(&out, id, "ct-public", "dec");
    assert_eq!(public.status, CtStatus::NoneFound, "{:#?}", public.findings);
    assert_eq!((public.secret_bytes, public.declassified_bytes), (2 * 2 * 13, 2 * 2 * 3));
    assert_eq!(public.declassified, ["secret key bytes 0..3 (the planted bytes)"]);
    assert_eq!(ct_record(&out, id, "ct-leak", "dec").declassified_bytes, 0);
    timing_is_measured_from_outside(&out, id);
    // Paths are the tree's, never the machine's.
    let text = std::fs::read_to_string(common::layout(&out).ct(id, "ct-leak", "dec")).unwrap();
    assert!(!text.contains("/src/") && !text.contains(tmp.path().to_str().unwrap()));
}

/// The timing test: decapsulation always, the rest only where memcheck found something.
/// The planted slow path differs far past the threshold; the twins' t is recorded, not
/// asserted (a low t is no proof, and a shared machine's noise is not the candidate's).
fn timing_is_measured_from_outside(out: &Path, id: &str) {
    use xtask::evidence::schema::CtTimingStatus;
    let slow = ct_record(out, id, "ct-slow", "dec");
    assert_eq!(places(&slow), expected("ct-slow"));
    let t = slow.timing.expect("dec is always timed");
    assert_eq!((t.status, t.taken, t.helpers), (CtTimingStatus::Differs, 4000, 0), "{t:#?}");
    assert!(t.t.abs() > t.threshold && t.n[0] >= 500 && t.n[1] >= 500, "{t:#?}");
    for label in ["ct-leak", "ct-twin", "ct-hide"] {
        let t = ct_record(out, id, label, "dec").timing.unwrap_or_else(|| panic!("{label}: dec not timed"));
        assert!(
            matches!(t.status, CtTimingStatus::Differs | CtTimingStatus::Inconclusive | CtTimingStatus::NoneFound),
            "{label}: {t:#?}"
        );
        assert_eq!(t.taken, 4000);
        let moved: Vec<String> = t.moved.iter().map(|m| format!("{}: {:.2}", m.what, m.t)).collect();
        eprintln!("{label} dec: t = {:.2} ({}); {}", t.t, t.test, moved.join("; "));
    }
    for op in ["keygen", "enc"] {
        assert!(ct_record(out, id, "ct-twin", op).timing.is_none(), "{op}: no finding, no timing test");
    }
    // Memcheck failed: no timing test either.
    assert!(ct_record(out, id, "ct-flood", "dec").timing.is_none());
    // A helper thread could do the work outside the window: refused, never a figure.
    let helper = ct_record(out, id, "ct-helper", "dec").timing.unwrap();
    assert_eq!(helper.status, CtTimingStatus::Failed, "{helper:#?}");
    assert!(helper.detail.as_deref().unwrap_or_default().contains("helper thread"), "{helper:?}");
    // An early answer on the driver's channel breaks the protocol: refused too.
    let answer = ct_record(out, id, "ct-answer", "dec").timing.unwrap();
    assert_eq!((answer.status, answer.taken < 4000), (CtTimingStatus::Failed, true), "{answer:#?}");
    assert!(answer.detail.as_deref().unwrap_or_default().contains("protocol"), "{answer:?}");
    // A slow path left for the next call to pay: outside the window that owes it, so the
    // window alone shows nothing; the gap after it, or the next window, by its class does.
    // (The window's own test may differ by chance too, as the twins' may: then it speaks
    // for the record, and the moved tests stand beside it.)
    let defer = ct_record(out, id, "ct-defer", "dec").timing.unwrap();
    eprintln!("ct-defer dec: t = {:.2} ({}) {:?} {:?}", defer.t, defer.test, defer.detail, defer.moved);
    assert_eq!((defer.status, defer.taken), (CtTimingStatus::Differs, 4000), "{defer:#?}");
    assert!(defer.moved.iter().any(|m| m.t.abs() > defer.threshold), "{:?}", defer.moved);
    if let Some(d) = &defer.detail {
        assert!(d.contains("work moved out of the timed window"), "{defer:?}");
    }
    // Constant-time only where ct used to look (its own program, its timer as process 1,
    // the timer's descriptors): memcheck, which a library can always tell, sees the twin;
    // the timing test runs the build's one program, started as every other run, and sees
    // the leak.
    let chameleon = ct_record(out, id, "ct-chameleon", "dec");
    assert_eq!(chameleon.status, CtStatus::NoneFound, "{:#?}", chameleon.findings);
    let t = chameleon.timing.expect("dec is always timed");
    assert_eq!((t.status, t.taken), (CtTimingStatus::Differs, 4000), "{t:#?}");
    assert!(t.command.starts_with(&["/build/candidate".to_owned(), "<".into(), "ct".into()]), "{:?}", t.command);
}

#[test]
fn signature_leaks_are_found_in_sign_and_the_twin_is_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let mk = |label, defines| SigInst {
        label,
        scheme: VAR,
        template: false,
        defines,
        kat: "PASS",
        contract: sig_fixture::Contract::Holds,
    };
    let insts = vec![mk("sct-leak", "#define FIX_CT_LEAK 1\n"), mk("sct-twin", "#define FIX_CT_TWIN 1\n")];
    let (_, zip) = sig_fixture::write_archive(tmp.path(), &insts);
    let m = sig_fixture::manifest_dir(&tmp.path().join("m"), &zip, &insts, sig_fixture::Lengths::Carry);
    let out = tmp.path().join("out");
    let run = run_ct(&m, &zip, &out, &["--op", "sign"]);
    assert_eq!(run.status.code(), Some(1));
    let id = sig_fixture::ID;
    let leak = ct_record(&out, id, "sct-leak", "sign");
    assert_eq!(places(&leak), expected("sct-leak"), "{:#?}", leak.findings);
    assert!(leak.findings.iter().all(|f| f.stack.iter().any(|s| s.function == "sig_sign")));
    let t = leak.timing.as_ref().expect("sign had findings: timed");
    assert_eq!((t.taken, t.helpers), (4000, 0), "{t:#?}");
    let twin = ct_record(&out, id, "sct-twin", "sign");
    assert_eq!((twin.status, twin.secret_bytes > 0, twin.random_bytes > 0), (CtStatus::NoneFound, true, true));
    assert!(twin.timing.is_none());
    assert!(!common::layout(&out).ct(id, "sct-leak", "keygen").exists(), "--op sign runs sign only");
}

/// A key exchange: the planted lines in init, where the DRNG output (and so the secret
/// key) is secret; the twin's init is clean. The fixture's own passes and derivation
/// branch on the pass counter its state keeps: findings of their own, not asserted here.
#[test]
fn key_exchange_leaks_are_found_in_init_and_the_twin_is_clean() {
    use common::kex_fixture as kex;
    let tmp = tempfile::tempdir().unwrap();
    let base = kex::subset(&["kex-p2"]).remove(0);
    let insts = vec![
        kex::KexInst { label: "xct-leak", defines: "#define FIX_CT_LEAK 1\n", ..base.clone() },
        kex::KexInst { label: "xct-twin", defines: "#define FIX_CT_TWIN 1\n", ..base },
    ];
    let (_, zip) = kex::write_archive(tmp.path(), &insts);
    let m = kex::manifest_dir(&tmp.path().join("m"), &zip, &insts);
    let out = tmp.path().join("out");
    let run = run_ct(&m, &zip, &out, &[]);
    assert_eq!(run.status.code(), Some(1));
    let leak = ct_record(&out, kex::ID, "xct-leak", "init");
    assert_eq!(places(&leak), expected("xct-leak"), "{:#?}", leak.findings);
    assert!(leak.random_bytes > 0);
    let t = leak.timing.as_ref().expect("init had findings: timed");
    assert_eq!((t.taken, t.helpers), (4000, 0), "{t:#?}");
    let twin = ct_record(&out, kex::ID, "xct-twin", "init");
    assert_eq!(twin.status, CtStatus::NoneFound, "{:#?}", twin.findings);
    for op in ["passes", "derive"] {
        let r = ct_record(&out, kex::ID, "xct-twin", op);
        assert!(r.secret_bytes > 0 && r.status != CtStatus::Failed, "{op}: {r:#?}");
    }
}
