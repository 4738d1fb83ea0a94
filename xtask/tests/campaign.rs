//! `cargo xtask campaign`: the default submission end to end, progress lines, and
//! --resume skipping exactly the steps whose evidence still matches the index; a key
//! exchange campaign on its fixture.

mod common;

use common::{stdout, xtask};
use xtask::evidence::schema::{CampaignReport, CtRecord, CtStatus};

#[test]
fn campaign_runs_the_default_and_resumes_from_indexed_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // Verify steps take three instances at a time (--jobs); timing stays one at a time.
    let o = out.to_str().unwrap();
    let args = ["campaign", "--engine", "podman", "--out", o, "--quick", "--allow-unfixed-host", "--jobs", "3"];
    let first = xtask(&args, None);
    assert!(first.status.success());
    let text = stdout(&first);
    // A bench step and a ct timing step per instance; ct's memcheck step beside them.
    let steps = [
        "[1/11] image",
        "[2/11] verify pqclean-ml-kem",
        "[3/11] bench pqclean-ml-kem ML-KEM-512",
        "[4/11] bench pqclean-ml-kem ML-KEM-768",
        "[5/11] bench pqclean-ml-kem ML-KEM-1024",
        "[6/11] profile pqclean-ml-kem",
        "[7/11] ct pqclean-ml-kem",
        "[8/11] ct timing pqclean-ml-kem ML-KEM-512",
        "[9/11] ct timing pqclean-ml-kem ML-KEM-768",
        "[10/11] ct timing pqclean-ml-kem ML-KEM-1024",
        "[11/11] sanitize pqclean-ml-kem",
    ];
    for step in steps {
        assert!(text.contains(&format!("{step}: done in")), "{step}\n{text}");
    }
    assert!(text.contains("s left"));
    assert!(out.join("local/records/pqclean-ml-kem/ML-KEM-1024__dec.json").is_file());
    assert!(out.join("local/profile/pqclean-ml-kem/survey.json").is_file());
    assert!(out.join("local/ct/pqclean-ml-kem/ML-KEM-768__dec.json").is_file());
    // ML-KEM's keygen expands ρ (public, in the public key) from the secret DRNG output:
    // its rejection sampling is listed as public by design (the manifest's
    // `ct_public_derived`), not a finding, and the page says so.
    for label in ["ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"] {
        let path = out.join(format!("local/ct/pqclean-ml-kem/{label}__keygen.json"));
        let keygen: CtRecord = xtask::evidence::schema::read(camino::Utf8Path::from_path(&path).unwrap())
            .unwrap()
            .unwrap_or_else(|| panic!("{label}: no keygen ct record"));
        assert_eq!(keygen.status, CtStatus::NoneFound, "{label}: {:?}", keygen.findings);
        assert!(keygen.public_derived.iter().any(|f| f.at.function.contains("rej_uniform")), "{label}");
        assert!(keygen.declassified.iter().any(|d| d.contains("gen_matrix")), "{label}: {:?}", keygen.declassified);
        // Decapsulation is always timed: its timing step completed the memcheck record.
        let path = out.join(format!("local/ct/pqclean-ml-kem/{label}__dec.json"));
        let dec: CtRecord =
            xtask::evidence::schema::read(camino::Utf8Path::from_path(&path).unwrap()).unwrap().unwrap();
        assert!(dec.timing.is_some() && dec.status != CtStatus::Failed, "{label}: {:?}", dec.status);
    }

    // One record lost (an interrupted bench): --resume times that instance's step alone,
    // which keeps its two other records. Resumed under --json: stdout is the run report alone.
    let records = out.join("local/records/pqclean-ml-kem");
    let started = |name: &str| common::record(&out, "pqclean-ml-kem", "ML-KEM-512", name).started;
    let kept_before = started("keygen");
    std::fs::remove_file(records.join("ML-KEM-768__enc.json")).unwrap();
    let resumed = xtask(&[&args[..], &["--resume", "--json"]].concat(), None);
    assert!(resumed.status.success());
    let text = String::from_utf8_lossy(&resumed.stderr);
    for (n, step) in steps.iter().enumerate().skip(1).filter(|(n, _)| *n != 3) {
        assert!(text.contains(&format!("{step}: evidence present and indexed, skipped")), "{n}: {text}");
    }
    assert_eq!(text.matches("kept (--resume)").count(), 2, "{text}");
    assert_eq!(started("keygen"), kept_before, "a kept record is not timed again");
    assert!(records.join("ML-KEM-768__enc.json").is_file(), "the lost record is timed again");
    let report: CampaignReport = serde_json::from_slice(&resumed.stdout).expect("campaign --json");
    let outcomes: Vec<(&str, &str)> = report.steps.iter().map(|s| (s.step.as_str(), s.outcome.as_str())).collect();
    assert_eq!(
        outcomes,
        [
            ("image", "done"),
            ("verify pqclean-ml-kem", "kept"),
            ("bench pqclean-ml-kem ML-KEM-512", "kept"),
            ("bench pqclean-ml-kem ML-KEM-768", "done"),
            ("bench pqclean-ml-kem ML-KEM-1024", "kept"),
            ("profile pqclean-ml-kem", "kept"),
            ("ct pqclean-ml-kem", "kept"),
            ("ct timing pqclean-ml-kem ML-KEM-512", "kept"),
            ("ct timing pqclean-ml-kem ML-KEM-768", "kept"),
            ("ct timing pqclean-ml-kem ML-KEM-1024", "kept"),
            ("sanitize pqclean-ml-kem", "kept")
        ]
    );
    assert!(!report.tool_failure);
    let check = xtask(&["evidence", "check", out.to_str().unwrap()], None);
    assert!(check.status.success(), "the resumed bench re-indexed its evidence");

    // Evidence that no longer matches the index is not trusted: that step runs again.
    let log = out.join("local/kat/pqclean-ml-kem/ML-KEM-512.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&log, bytes).unwrap();
    let again = xtask(&[&args[..], &["--resume", "--no-bench", "--no-ct", "--no-sanitize"]].concat(), None);
    assert!(again.status.success());
    let text = stdout(&again);
    assert!(text.contains("[2/2] verify pqclean-ml-kem: done in"), "{text}");
    let check = xtask(&["evidence", "check", out.to_str().unwrap()], None);
    assert!(check.status.success(), "the re-run restored and re-indexed the evidence");
}

/// A key exchange through every step: each instance is timed over its own passes, and
/// `--resume` knows that a 0-pass instance has no pass to time.
#[test]
fn a_key_exchange_campaign_times_each_instances_passes_and_resumes() {
    use common::kex_fixture as kex;
    let tmp = tempfile::tempdir().unwrap();
    let insts = kex::subset(&["kex-p0", "kex-p4"]);
    let (_, zip) = kex::write_archive(tmp.path(), &insts);
    let m = kex::manifest_dir(&tmp.path().join("m"), &zip, &insts);
    let out = tmp.path().join("out");
    let (m, o, z) = (m.to_str().unwrap(), out.to_str().unwrap(), zip.to_str().unwrap());
    let base = ["campaign", m, "--engine", "podman", "--out", o, "--archive", z, "--quick", "--allow-unfixed-host"];
    // Sanitizer builds have their own test (sanitize_fixture.rs).
    let args = [&base[..], &["--jobs", "2", "--no-sanitize"]].concat();
    let first = xtask(&args, None);
    assert!(first.status.success());
    let text = stdout(&first);
    let steps = [
        "[2/8] verify fixture-kex",
        "[3/8] bench fixture-kex kex-p0",
        "[4/8] bench fixture-kex kex-p4",
        "[5/8] profile fixture-kex",
        "[6/8] ct fixture-kex",
        "[7/8] ct timing fixture-kex kex-p0",
        "[8/8] ct timing fixture-kex kex-p4",
    ];
    for step in steps {
        assert!(text.contains(&format!("{step}: done in")), "{step}\n{text}");
    }
    assert!(out.join("local/ct/fixture-kex/kex-p4__passes.json").is_file());
    let records = out.join("local/records/fixture-kex");
    assert!(records.join("kex-p4__pass4.json").is_file() && records.join("kex-p0__derive_b.json").is_file());
    assert!(!records.join("kex-p0__pass1.json").exists(), "a 0-pass instance has no pass");
    assert!(out.join("local/profile/fixture-kex/kex-p4__exchange.json").is_file());
    let resumed = xtask(&[&args[..], &["--resume"]].concat(), None);
    assert!(resumed.status.success());
    let text = stdout(&resumed);
    for step in steps {
        assert!(text.contains(&format!("{step}: evidence present and indexed, skipped")), "{step}\n{text}");
    }
}

/// Benchmark, not a check of speed (`cargo test -p xtask --test campaign -- --ignored
/// --nocapture jobs`): the field fixture and the two embedded submissions, verify steps
/// only (no timing step), with `--jobs 1` and `--jobs 2` over a warm build cache; prints
/// both wall times. Both runs end with the same statuses and evidence that checks; then
/// Ctrl-C at two points of a `--jobs 2` run leaves evidence that checks, and `--resume`
/// finishes with the same statuses.
#[test]
#[ignore = "benchmark: several minutes of container runs"]
fn jobs_2_against_jobs_1_on_the_field_fixture_and_two_embedded_submissions() {
    use std::os::unix::process::CommandExt;
    use std::time::Instant;
    let case = common::field::Case::new();
    let dir = case.out.parent().unwrap().to_owned();
    let (field, api) = (format!("field-kem={}", case.zip.display()), format!("iccs-api={}", case.api.display()));
    let run = |out: &std::path::Path, extra: &[&str]| {
        let o = out.to_str().unwrap();
        let mut args = vec!["campaign", case.manifest.to_str().unwrap(), "pqclean-ml-kem", "pqclean-ml-dsa"];
        args.extend(["--engine", "podman", "--out", o, "--archive", &field, "--archive", &api]);
        args.extend(["--no-bench", "--no-ct", "--no-sanitize", "--json"]);
        args.extend(extra);
        std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(&args)
            .env("NGCC_REPRO_ICCS_API", &case.pin)
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let statuses = |out: &std::path::Path| -> Vec<(String, String, String)> {
        let mut all = Vec::new();
        for id in ["field-kem", "pqclean-ml-kem", "pqclean-ml-dsa"] {
            for i in common::summary(out, id).instances {
                all.push((id.to_owned(), i.label.clone(), format!("{:?} {:?}", i.status, i.actual_sha256)));
            }
        }
        all
    };
    let checks = |out: &std::path::Path| xtask(&["evidence", "check", out.to_str().unwrap()], None).status.success();
    let timed = |name: &str, extra: &[&str]| {
        let out = dir.join(name);
        let t = Instant::now();
        let done = run(&out, extra).wait_with_output().unwrap();
        let secs = t.elapsed().as_secs_f64();
        eprintln!("{name}: exit {:?} in {secs:.1} s\n{}", done.status.code(), String::from_utf8_lossy(&done.stderr));
        let report: CampaignReport = serde_json::from_slice(&done.stdout).expect("campaign --json");
        let steps: Vec<(String, String)> = report.steps.into_iter().map(|s| (s.step, s.outcome)).collect();
        (out, done.status.code(), secs, steps)
    };
    // Every build made once, so both runs reuse them alike.
    let _ = timed("warm", &["--jobs", "2"]);
    let (one, code1, secs1, steps1) = timed("jobs1", &["--jobs", "1"]);
    let (two, code2, secs2, steps2) = timed("jobs2", &["--jobs", "2"]);
    eprintln!("BENCH campaign wall time: --jobs 1 {secs1:.1} s, --jobs 2 {secs2:.1} s, ratio {:.2}", secs2 / secs1);
    assert_eq!((code1, &steps1), (code2, &steps2));
    assert_eq!(statuses(&one), statuses(&two));
    assert!(checks(&one) && checks(&two));

    // Ctrl-C at two points of a --jobs 2 run over the same set; --resume finishes it.
    let out = dir.join("interrupted");
    for fraction in [0.3, 0.7] {
        let child = run(&out, &["--jobs", "2"]);
        std::thread::sleep(std::time::Duration::from_secs_f64(secs2 * fraction));
        // SAFETY: signals the process group the test made for the child.
        unsafe { libc::killpg(child.id() as i32, libc::SIGINT) };
        let stopped = child.wait_with_output().unwrap();
        eprintln!("Ctrl-C at {fraction}: {:?}\n{}", stopped.status, String::from_utf8_lossy(&stopped.stderr));
        assert!(matches!(stopped.status.code(), Some(130 | 0 | 1)), "{:?}", stopped.status);
        if out.join("EVIDENCE.sha256").exists() {
            assert!(checks(&out), "Ctrl-C at {fraction} left evidence that does not match its index");
        }
    }
    let resumed = run(&out, &["--jobs", "2", "--resume"]).wait_with_output().unwrap();
    assert_eq!(resumed.status.code(), code2, "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(statuses(&out), statuses(&two));
    assert!(checks(&out));
}

/// Benchmark, not a check of speed (`cargo test -p xtask --test campaign -- --ignored
/// --nocapture timing_cores`): the two embedded submissions timed with one timing core
/// (cpu0, the rest of the run on cpu1) and with two (cpu0 and cpu1, the rest taking
/// turns), twice each, alternating, in one run; prints per operation the ratio of the
/// two-core median trial time to the one-core one, and of the CPU per operation the host
/// read, with their spread. Checks only what the records say of their cores.
#[test]
#[ignore = "benchmark: several minutes of container runs"]
fn timing_cores_2_against_1_on_two_embedded_submissions() {
    use std::collections::BTreeMap;
    use xtask::evidence::schema::Record;
    let tmp = tempfile::tempdir().unwrap();
    let ids = ["pqclean-ml-kem", "pqclean-ml-dsa"];
    let run = |name: &str, cores: &str| {
        let out = tmp.path().join(name);
        let o = out.to_str().unwrap();
        let mut args = vec!["campaign", ids[0], ids[1], "--engine", "podman", "--out", o, "--quick"];
        args.extend(["--allow-unfixed-host", "--no-profile", "--no-ct", "--no-sanitize", "--timing-cores", cores]);
        let t = std::time::Instant::now();
        let done = xtask(&args, None);
        eprintln!("{name} (--timing-cores {cores}): {:?} in {:.1} s", done.status.code(), t.elapsed().as_secs_f64());
        // A record the host's check refused (a loaded machine) is left out below, not a failure.
        assert!(matches!(done.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&done.stderr));
        out
    };
    let records = |out: &std::path::Path| -> Vec<Record> {
        let dir = out.join("local/records");
        let files = walkdir::WalkDir::new(dir).into_iter().map(|e| e.unwrap().into_path());
        let json = files.filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("environment.json"));
        json.filter_map(|p| xtask::evidence::schema::read::<Record>(camino::Utf8Path::from_path(&p).unwrap()).ok()?)
            .collect()
    };
    // key → [one-core figures], [two-core figures]; each figure (median trial ns, host CPU ns per op).
    let mut seen: BTreeMap<String, [Vec<(f64, f64)>; 2]> = BTreeMap::new();
    let mut overlapped = 0;
    for round in 0..2 {
        for (which, cores) in [(0, "0"), (1, "0,1")] {
            let out = run(&format!("r{round}-{which}"), cores);
            for r in records(&out) {
                if r.host_check.credibility == xtask::evidence::schema::Credibility::NotCredible {
                    eprintln!(
                        "BENCH left out: {} {} {} in {name}, not credible",
                        r.id,
                        r.label,
                        r.op.name(),
                        name = out.display()
                    );
                    continue;
                }
                let core = r.core.as_ref().expect("every record names its core");
                assert_eq!(core.timing_cores, if which == 0 { vec![0] } else { vec![0, 1] });
                overlapped +=
                    usize::from(core.beside.as_ref().is_some_and(|b| b.iter().any(|s| s.starts_with("bench"))));
                let kept: Vec<&_> = r.trials.iter().filter(|t| !t.trial.replaced).collect();
                let cpu: Vec<f64> = kept
                    .iter()
                    .filter_map(|t| Some(t.host_cpu_ns? as f64 * t.trial.ns as f64 / t.accounted_ns.max(1) as f64))
                    .map(|ns| ns / r.plan.iterations.max(1) as f64)
                    .collect();
                let cpu = xtask::measure::stats::median(cpu);
                let key = format!("{} {} {}", r.id, r.label, r.op.name());
                seen.entry(key).or_default()[which].push((r.aggregate.median_trial_ns, cpu));
            }
        }
    }
    let median = |v: Vec<f64>| xtask::measure::stats::median(v);
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for (key, [one, two]) in seen.iter().filter(|(_, [one, two])| !one.is_empty() && !two.is_empty()) {
        let m = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| median(v.iter().map(f).collect());
        let (w, c) = (m(two, |x| x.0) / m(one, |x| x.0), m(two, |x| x.1) / m(one, |x| x.1));
        eprintln!("BENCH {key}: 2 cores / 1 core: median trial {w:.3}, host CPU per op {c:.3}");
        wall.push(w);
        cpu.push(c);
    }
    let spread = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        format!(
            "median {:.3}, quartiles [{:.3}, {:.3}], range [{:.3}, {:.3}]",
            q(0.5),
            q(0.25),
            q(0.75),
            q(0.0),
            q(1.0)
        )
    };
    eprintln!("BENCH {} operations; records timed beside another bench step: {overlapped}", seen.len());
    eprintln!("BENCH ratio of median trial time, 2 cores / 1 core: {}", spread(wall));
    eprintln!("BENCH ratio of host CPU per operation, 2 cores / 1 core: {}", spread(cpu));
    assert!(overlapped > 0, "with two timing cores no two bench steps ran at once");
}
