//! Sensitivity of the hash content control (issue 31): `cargo bench -p xtask --bench
//! content_control`. Needs podman and the Debian 13 image. Times the hash fixture's
//! honest SHA-256 and copies of it that do more work on content other than the timing
//! driver's reference pattern (1.1, 1.25, 1.5, 2 and 50 times as much), with `bench
//! --quick` at two message sizes, a few rounds idle and a few with one core kept busy
//! by a spin loop this bench starts; prints each record's verdict, t and ratio, and how
//! often each was flagged. Figures, not targets, except that the 50-times copy must be
//! flagged every time (what tests/hash_fixture.rs asserts).

use std::path::Path;
use std::process::{Child, Command};
use std::time::Instant;

#[path = "../tests/common/mod.rs"]
mod common;

use common::hash_fixture::{Case, HashInst, ID};
use xtask::evidence::schema::{self, ContentVerdict, Record};

const INSTANCES: &[HashInst] = &[
    ("h-good", "", 256, None),
    ("h-c1100", "#define FIX_CONTENT 1\n#define FIX_CONTENT_PERMILLE 100\n", 256, None),
    ("h-c1250", "#define FIX_CONTENT 1\n#define FIX_CONTENT_PERMILLE 250\n", 256, None),
    ("h-c1500", "#define FIX_CONTENT 1\n#define FIX_CONTENT_PERMILLE 500\n", 256, None),
    ("h-c2000", "#define FIX_CONTENT 1\n#define FIX_CONTENT_PERMILLE 1000\n", 256, None),
    ("h-content", "#define FIX_CONTENT 1\n", 256, None),
];
const OPS: [&str; 2] = ["hash_1024", "hash_65536"];
const ROUNDS: usize = 3;

/// One `bench --quick` of every instance at [`OPS`]; returns its wall time.
fn bench(c: &Case, out: &Path) -> f64 {
    let archive = format!("{ID}={}", c.zip.display());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.args(["bench", c.manifest.to_str().unwrap(), "--engine", "podman", "--archive", &archive, "--quick"]);
    cmd.args(["--allow-unfixed-host", "--no-baselines", "--out"]).arg(out);
    OPS.iter().for_each(|op| _ = cmd.args(["--op", op]));
    let start = Instant::now();
    let o = cmd.output().expect("xtask bench");
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    start.elapsed().as_secs_f64()
}

/// A process that keeps one core busy until it is killed.
fn spin() -> Child {
    Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("sh")
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` lists benchmarks; nothing to list here
    }
    let c = Case::with(INSTANCES);
    bench(&c, &c.tmp.path().join("warm-up")); // builds and the trial runner, once
    let mut flagged = std::collections::BTreeMap::<(&str, &str, &str), usize>::new();
    println!("condition round instance    op          verdict                t         ratio   measurements");
    for (condition, busy) in [("idle", false), ("busy", true)] {
        let mut spinner = busy.then(spin);
        for round in 1..=ROUNDS {
            let out = c.tmp.path().join(format!("{condition}-{round}"));
            let wall = bench(&c, &out);
            let layout = common::layout(&out);
            for (label, ..) in INSTANCES {
                for op in OPS {
                    let r: Record = schema::read(&layout.record(ID, label, op)).unwrap().expect("record");
                    let k = r.content.expect("a content control");
                    let t = k.welch.as_ref().map_or(f64::NAN, |w| w.t);
                    let ratio = k.ratio.unwrap_or(f64::NAN);
                    let depends = k.verdict == ContentVerdict::Depends;
                    *flagged.entry((condition, *label, op)).or_default() += usize::from(depends);
                    println!(
                        "{condition:9} {round:5} {label:11} {op:11} {:22} {t:9.2} {ratio:9.3}   {} / {}",
                        format!("{:?}", k.verdict),
                        k.taken[0],
                        k.taken[1]
                    );
                }
            }
            println!("{condition:9} {round:5} (bench wall {wall:.1} s)");
        }
        if let Some(s) = spinner.as_mut() {
            s.kill().expect("stop the spin loop");
            s.wait().expect("reap the spin loop");
        }
    }
    println!("\nflagged (of {ROUNDS} rounds):");
    for ((condition, label, op), n) in &flagged {
        println!("  {condition:5} {label:11} {op:11} {n}");
    }
    for condition in ["idle", "busy"] {
        for op in OPS {
            assert_eq!(
                flagged[&(condition, "h-content", op)],
                ROUNDS,
                "50 times slower, {condition}, {op}: not flagged"
            );
        }
    }
}
