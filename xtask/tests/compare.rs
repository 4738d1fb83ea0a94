//! `cargo xtask compare` on the golden evidence set (`common/golden_set.rs`, no
//! container): the two systems of one set (x86-64 and AArch64) are refused with every
//! difference named, and compared with `--allow-differences` with the differences on
//! the page; the signature records of one machine against another machine of the same
//! build are compared without override, as ratios of their figures; an emulated side is
//! named as such.

mod common;

use std::path::Path;

use camino::Utf8Path;
use common::golden_set::{self, labels, ops, KEM, SIG};
use common::xtask;
use xtask::evidence::schema::{self, Record};
use xtask::evidence::Layout;
use xtask::measure::stats;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every record of `id` on `system` in `out`, changed by `edit` and written back.
fn edit_records(out: &Path, system: &str, id: &str, edit: &dyn Fn(&mut Record)) {
    let layout = Layout::new(Utf8Path::from_path(out).unwrap(), system);
    for label in labels(id) {
        for op in ops(id) {
            let path = layout.record(id, &label, op.name());
            let mut r: Record = schema::read(&path).unwrap().unwrap();
            edit(&mut r);
            schema::write(&path, &r).unwrap();
        }
    }
}

/// The rows of the comparison table: (submission, instance, operation, B / A).
fn rows(page: &str) -> Vec<(String, String, String, String)> {
    page.lines()
        .filter(|l| l.starts_with("| pqclean-"))
        .map(|l| {
            let c: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            (c[0].into(), c[1].into(), c[2].into(), c[5].into())
        })
        .collect()
}

#[test]
fn the_two_systems_are_refused_then_compared_with_their_differences_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    golden_set::write(&out);
    let (a, b) = (format!("{}:x86_1", s(&out)), format!("{}:arm_1", s(&out)));
    let refused = xtask(&["compare", &a, &b], None);
    assert!(!refused.status.success());
    let err = stderr(&refused);
    for d in ["architecture: x86_64 vs aarch64", "library sha256", "image", "CPU model", "--allow-differences"] {
        assert!(err.contains(d), "{d}: {err}");
    }
    assert!(!err.contains("compiler:") && !err.contains("counter:"), "only what differs: {err}");
    let bare = xtask(&["compare", s(&out), s(&out)], None);
    assert!(!bare.status.success() && stderr(&bare).contains("name one as"), "two systems: say which");

    let page_dir = tmp.path().join("comparison");
    let allowed = xtask(&["compare", &a, &b, "--allow-differences", "--out", s(&page_dir)], None);
    assert!(allowed.status.success());
    let page = std::fs::read_to_string(page_dir.join("compare.md")).unwrap();
    assert!(page.contains("WARNING: compared with --allow-differences"), "{page}");
    // 9 KEM and 12 signature operations.
    assert!(page.contains("- architecture: x86_64 vs aarch64 (21 operations)"), "{page}");
    let rows = rows(&page);
    assert_eq!(rows.len(), 21, "{page}");
    for id in [KEM, SIG] {
        for label in labels(id) {
            for op in ops(id) {
                let row = rows.iter().find(|r| (r.0.as_str(), r.1.as_str(), r.2.as_str()) == (id, &label, op.name()));
                // arm_1's golden figures are 1.5 times x86_1's.
                assert_eq!(row.map(|r| r.3.as_str()), Some("1.500"), "{id} {label} {op}: {page}");
            }
        }
    }
    assert!(page.contains("| pqclean-ml-dsa | ML-DSA-44 | sign | 298 µs | 448 µs | 1.500 |"), "{page}");
    let html = std::fs::read_to_string(page_dir.join("compare.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("<title>ML-DSA-87 sign_msgs out:x86_1: "), "{html}");
}

#[test]
fn signature_records_of_two_machines_are_compared_and_an_emulated_side_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    golden_set::write_part(&a, &["x86_1"], &[KEM, SIG]);
    // B: the same builds on another machine, the signature submission only, twice as slow.
    golden_set::write_part(&b, &["x86_1"], &[SIG]);
    edit_records(&b, "x86_1", SIG, &|r| {
        r.environment.machine = "golden x86_1, second machine".into();
        for t in &mut r.trials {
            (t.trial.ns, t.trial.ticks) = (t.trial.ns * 2, t.trial.ticks * 2);
        }
        r.aggregate = stats::aggregate(&r.trials.iter().map(|t| t.trial.clone()).collect::<Vec<_>>());
    });
    let page_dir = tmp.path().join("comparison");
    let c = xtask(&["compare", s(&a), s(&b), "--out", s(&page_dir)], None);
    assert!(c.status.success(), "another machine is the point of comparing: {}", stderr(&c));
    let page = std::fs::read_to_string(page_dir.join("compare.md")).unwrap();
    assert!(!page.contains("WARNING"), "{page}");
    let rows = rows(&page);
    assert_eq!(rows.len(), 12, "the operations both sides have: {page}");
    assert!(rows.iter().all(|r| r.0 == SIG && r.3 == "2.000"), "{page}");
    let mut seen: Vec<(String, String)> = rows.iter().map(|r| (r.1.clone(), r.2.clone())).collect();
    let mut want: Vec<(String, String)> = labels(SIG)
        .into_iter()
        .flat_map(|l| ops(SIG).into_iter().map(move |o| (l.clone(), o.name().to_owned())))
        .collect();
    seen.sort();
    want.sort();
    assert_eq!(seen, want, "every signature operation, once: {page}");

    // One side emulated: refused and named; overridden, the page says it.
    edit_records(&b, "x86_1", SIG, &|r| {
        (r.emulated, r.timing_comparable, r.toolchain.emulated) = (true, false, true);
    });
    let refused = xtask(&["compare", s(&a), s(&b)], None);
    assert!(!refused.status.success() && stderr(&refused).contains("emulated: false vs true"), "{}", stderr(&refused));
    let allowed = xtask(&["compare", s(&a), s(&b), "--allow-differences"], None);
    assert!(allowed.status.success());
    let text = common::stdout(&allowed);
    assert!(text.contains("- emulated: false vs true (12 operations)"), "{text}");
    assert!(text.contains("One side ran under emulation: its times are not measurements"), "{text}");
}
