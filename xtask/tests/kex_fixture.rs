//! The key-exchange path end to end on a fixture written for this project
//! (`tests/fixture/kex_body.c`, modelled in `tests/common/kex_fixture.rs`): one verify
//! over every instance reaches PASS for 0 to 4 passes and every failing verdict of issue
//! 21, the length contract finds the pass that never sets its length, the tampered
//! passes the exchange that never reads a message's last byte, and a short
//! bench, profile, report and site run give the KEX page with its bandwidth. Expected
//! digests come from the Rust model, never from running the C code.

use std::path::Path;

mod common;

use common::kex_fixture::*;
use common::{entry, xtask};
use xtask::evidence::schema::{CheckVerdict, ProfileRecord, Record, Summary};

fn message(s: &Summary, label: &str) -> String {
    entry(s, label).message.clone().unwrap_or_default()
}

fn verify(m: &Path, zip: &Path, out: &Path) -> (std::process::Output, Summary) {
    // Three instances at a time: each is a few short containers, mostly engine start-up.
    let args = ["verify", m.to_str().unwrap(), "--engine", "podman", "--timeout", "120", "--jobs", "3"];
    let run = xtask(&[&args[..], &["--out", out.to_str().unwrap(), "--archive", zip.to_str().unwrap()]].concat(), None);
    let s = common::summary(out, ID);
    (run, s)
}

fn check_contract(s: &Summary, i: &KexInst) {
    let check = entry(s, i.label).check.as_ref();
    match i.contract {
        Contract::Holds => assert_eq!(check.map(|c| c.verdict), Some(CheckVerdict::Holds), "{}: {check:?}", i.label),
        Contract::Breach => {
            let c = check.unwrap_or_else(|| panic!("{}: no length contract", i.label));
            assert_eq!(c.verdict, CheckVerdict::Breach, "{}", i.label);
            let last = format!("pass {} never set the length of its message", i.passes);
            assert!(
                c.detail.contains(&last) && c.detail.contains(&total_msg_len(i.passes).to_string()),
                "{}",
                c.detail
            );
        }
        Contract::Unchecked => assert!(check.is_none(), "{}: {check:?}", i.label),
    }
}

/// What each failing instance's message must name (the call and the number seen).
const NAMED: [(&str, &[&str]); 8] = [
    ("kex-disagree", &["kex_derive_ss_b", "unequal", "3"]),
    ("kex-msgover", &["kex_generate_pass2_msg_b", "m2"]),
    ("kex-early", &["kex_generate_pass1_msg_a", "finished before the last pass"]),
    ("kex-never", &["kex_generate_pass3_msg_a", "did not finish"]),
    ("kex-hugepass", &["kex_get_passes_num", "1099511627776"]),
    ("kex-drift", &["kex_get_passes_num"]),
    ("kex-deriveover", &["kex_derive_ss_a", "ssa"]),
    ("kex-zerototal", &["kex_generate_pass1_msg_a", "m1"]),
];

#[test]
fn kex_fixture_reaches_every_verdict_and_its_page() {
    common::require_podman();
    let tmp = tempfile::tempdir().unwrap();
    let insts = instances();
    let (_, zip) = write_archive(tmp.path(), &insts);
    let m = manifest_dir(&tmp.path().join("m"), &zip, &insts);
    let out = tmp.path().join("out");

    let (run, s) = verify(&m, &zip, &out);
    assert!(!run.status.success(), "bad instances must fail the run");
    for i in &insts {
        let e = entry(&s, i.label);
        assert_eq!(e.status.name(), i.kat, "{}: {}", i.label, message(&s, i.label));
        if ["PASS", "MISMATCH"].contains(&i.kat) {
            let published = strict_digest(&i.published(), i.template);
            assert_eq!(e.expected_sha256.as_ref().map(|d| d.as_str()), Some(published.as_str()), "{}", i.label);
        }
        if i.kat == "PASS" {
            assert_eq!(e.actual_sha256, e.expected_sha256, "{}", i.label);
        }
        check_contract(&s, i);
    }
    for (label, words) in NAMED {
        let msg = message(&s, label);
        assert!(words.iter().all(|w| msg.contains(w)), "{label}: {msg}");
    }
    tampered_passes(&s, &String::from_utf8_lossy(&run.stdout));
    timing(&m, &zip, &out);
}

/// The tampered-pass verdicts: every honest exchange (whatever its KAT status or
/// contract) ends with other secrets on the two sides; the one that never reads a
/// message's last byte is named with the byte, though its text passes; a failed run is
/// that run's verdict.
fn tampered_passes(s: &Summary, stdout: &str) {
    let t = |label: &str| entry(s, label).tampered.clone().unwrap_or_else(|| panic!("{label}: no tampered check"));
    for label in ["kex-p0", "kex-p1", "kex-p2", "kex-p3", "kex-p4", "kex-template", "kex-tweak", "kex-unset"] {
        let c = t(label);
        assert!(c.holds() && c.seeds.len() == 3, "{label}: {c:?}");
    }
    let p2 = t("kex-p2").detail;
    assert!(p2.starts_with("18 exchanges") && p2.contains(": 18 gave the two sides different secrets"), "{p2}");
    assert!(t("kex-unset").detail.ends_with("; 9 empty messages left alone"), "pass 4 sends no byte");
    assert!(t("kex-p0").detail.starts_with("0 exchanges"), "nothing to tamper with");
    let deaf = t("kex-ignore");
    assert_eq!(deaf.verdict, CheckVerdict::Fails);
    let want = "record 0, message 1 (32 bytes), bit 0 of byte 31 flipped: both sides derived the untampered \
                exchange's secret (the tampered bit was never read)";
    assert_eq!(deaf.detail, want);
    assert_eq!(entry(s, "kex-ignore").status.name(), "PASS", "a verdict of its own, beside the KAT status");
    let row = stdout.lines().find(|l| l.trim_start().starts_with("kex-ignore")).unwrap_or_default();
    assert!(row.contains(" tampered passes: fails"), "{stdout}");
    assert!(stdout.contains(&format!("\n      {want}\n")), "{stdout}");
    let over = t("kex-zerototal");
    assert!(over.verdict == CheckVerdict::Fails && over.detail.starts_with("in the tampered-pass run: "), "{over:?}");
}

fn read(out: &Path, label: &str, op: &str) -> Option<Record> {
    xtask::evidence::schema::read(&common::layout(out).record(ID, label, op)).unwrap()
}

/// A short bench of a 4-pass, a 0-pass and the unset-length instance, a profile of the
/// whole exchange, then the page and the site.
fn timing(m: &Path, zip: &Path, out: &Path) {
    let (m, o, z) = (m.to_str().unwrap(), out.to_str().unwrap(), zip.to_str().unwrap());
    let base = ["--engine", "podman", "--out", o, "--archive", z, "--quick", "--allow-unfixed-host"];
    let mut args = vec!["bench", m, "--instance", "kex-p4", "--instance", "kex-p0", "--instance", "kex-unset"];
    args.extend(base);
    let bench = xtask(&args, None);
    assert!(bench.status.success(), "{}", String::from_utf8_lossy(&bench.stderr));
    let four = ["exchange", "init_a", "init_b", "pass1", "pass2", "pass3", "pass4", "derive_a", "derive_b"];
    for op in four {
        let r = read(out, "kex-p4", op).unwrap_or_else(|| panic!("kex-p4 {op}: no record"));
        assert!(r.aggregate.mean_ticks > 0.0, "kex-p4 {op}");
        let calls =
            r.per_call.as_ref().and_then(|p| p.figures).unwrap_or_else(|| panic!("kex-p4 {op}: {:?}", r.per_call));
        assert!(calls.median > 0 && calls.calls >= 31, "kex-p4 {op}: {calls:?}");
    }
    assert!(read(out, "kex-p0", "exchange").is_some() && read(out, "kex-p0", "pass1").is_none(), "0 passes");
    // The KAT run of the same library (ten whole exchanges) is held against the timed
    // exchange, and an honest one agrees.
    for label in ["kex-p4", "kex-p0"] {
        let r = read(out, label, "exchange").unwrap();
        let check = r.host_check.kat_run.clone().unwrap_or_else(|| panic!("{label}: not held against the KAT run"));
        assert!(check.credible && check.records == 10, "{label}: {check:?}");
    }
    let p4 = read(out, "kex-p4", "exchange").unwrap();
    let lens: Vec<u64> = (1..=4).map(|k| p4.sizes.returned.get(&format!("m{k}"))).collect();
    assert_eq!(lens, (1..=4).map(|k| msg_len(k) as u64).collect::<Vec<_>>());
    assert_eq!(p4.sizes.returned.get("unset"), 0);
    let unset = read(out, "kex-unset", "exchange").unwrap();
    assert_eq!((unset.sizes.returned.get("m4"), unset.sizes.returned.get("unset")), (0, 8), "pass 4 never sets it");
    // A length above the buffer stops the timing driver too, with the numbers.
    let mut args = vec!["bench", m, "--instance", "kex-zerototal", "--op", "pass1"];
    args.extend(base);
    let bad = xtask(&args, None);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{err}");
    assert!(err.contains("kex-zerototal pass1") && err.contains("buffer=message claimed=0 returned=32"), "{err}");

    let mut args = vec!["profile", m, "--instance", "kex-p2"];
    args.extend(base);
    assert!(xtask(&args, None).status.success());
    let p: ProfileRecord = xtask::evidence::schema::read(&common::layout(out).profile(ID, "kex-p2", "exchange"))
        .unwrap()
        .expect("a profile record of the exchange");
    let hash = p.groups.iter().find(|g| g.name == "hash").expect("the ICCS hash group");
    assert!(hash.symbols.iter().map(|s| s.calls).sum::<u64>() >= p.operations && hash.share > 0.0, "{hash:?}");

    page(m, out);
}

fn page(m: &str, out: &Path) {
    let o = out.to_str().unwrap();
    assert!(xtask(&["report", m, "--out", o], None).status.success());
    let page = std::fs::read_to_string(common::layout(out).report(ID)).unwrap();
    assert!(page.contains("function: key exchange"), "{page}");
    assert!(page.contains("\n- kex-ignore: **tampered passes fails**: record 0, message 1"), "{page}");
    let total = total_msg_len(4);
    let row = format!("| kex-p4 | 4 | 32 / 40 / 48 / 56 | {total} | {N} / {N} | {} | {N} | {SS} |", total + 2 * N);
    assert!(page.contains(&row), "{row}\n{page}");
    assert!(page.contains("| kex-unset | 4 | 32 / 40 / 48 / 0 (never set) | 120 |"), "{page}");
    assert!(page.contains("| kex-p0 | 0 | none | 0 |"), "{page}");
    assert!(page.contains("| kex-p4 | pass3") && page.contains("| kex-p2 | exchange |"), "{page}");
    let site = out.parent().unwrap().join("site");
    let s = xtask(&["site", o, "--out", site.to_str().unwrap(), "--manifest", m], None);
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    // The site's KAT cell carries the tampered verdict beside the status.
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(index.contains("<td>kex-ignore</td><td>PASS; tampered passes: fails</td>"), "{index}");
}
