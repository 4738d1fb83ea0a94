//! KEMs: the replay that corroborates a matching KAT digest. keygen, enc and dec run on
//! seeds the tool draws at run time, each in its own process (`drivers/kem_replay.c`),
//! with the shared secrets compared here. A program that prints a canned KAT text cannot
//! know these seeds, and one process cannot vouch for another's output.

use anyhow::Result;

use super::{CheckCtx as Ctx, Corroboration, Driver};
use crate::evidence::schema::{Check, CheckVerdict};
use crate::project;

const DRIVER: Driver = Driver { source: "kem_replay.c", program: "kem_replay" };

pub const REPLAY: Corroboration = Corroboration {
    driver: DRIVER,
    name: "replay",
    failure_is_mismatch: true,
    on_mismatch: false,
    holds: "replayed on seeds drawn at run time (keygen, enc and dec in separate processes, shared secrets \
            compared by the harness)",
    absent: "no replay (the manifest gives no API to replay through)",
    run,
};

/// Records per replay, and bytes per seed (what the timing adapters take).
const RECORDS: usize = 3;
const SEED_BYTES: usize = 48;
/// The replay prints a few keys per record; more is not a replay.
const OUTPUT_CAP: u64 = 64 << 20;

/// Seeds from the kernel's random source, never from anything the candidate saw.
pub fn draw_seeds() -> Result<Vec<Vec<u8>>> {
    (0..RECORDS).map(|_| crate::project::random_bytes(SEED_BYTES)).collect()
}

/// Replay on fresh seeds; a failure of the program is a failed replay, an engine failure
/// or an interruption an error.
fn run(ctx: &Ctx) -> Result<Check> {
    let seeds = draw_seeds()?;
    let hex_seeds: Vec<String> = seeds.iter().map(|s| project::hex(s).to_ascii_uppercase()).collect();
    let (verdict, detail) = match replay(ctx, &hex_seeds)? {
        Ok(()) => (
            CheckVerdict::Holds,
            format!(
                "{} records: keygen, enc and dec in separate processes; each decapsulated secret equals the \
                 encapsulated one, and keys and ciphertexts differ between records",
                seeds.len()
            ),
        ),
        Err(why) => (CheckVerdict::Fails, why),
    };
    Ok(Check { check: REPLAY.name.into(), seeds: hex_seeds, verdict, detail })
}

type Verdict = std::result::Result<(), String>;

fn replay(ctx: &Ctx, seeds: &[String]) -> Result<Verdict> {
    let keys = match ctx.op("keygen", seeds.to_vec(), 2)? {
        Ok(k) => k,
        Err(why) => return Ok(Err(why)),
    };
    let enc_in = seeds.iter().zip(&keys).map(|(s, k)| format!("{s} {}", k[0])).collect();
    let sent = match ctx.op("enc", enc_in, 2)? {
        Ok(c) => c,
        Err(why) => return Ok(Err(why)),
    };
    let dec_in = keys.iter().zip(&sent).map(|(k, c)| format!("{} {}", k[1], c[0])).collect();
    let got = match ctx.op("dec", dec_in, 1)? {
        Ok(g) => g,
        Err(why) => return Ok(Err(why)),
    };
    Ok(compare(&keys, &sent, &got))
}

/// The tool's own checks on the three processes' outputs.
fn compare(keys: &[Vec<String>], sent: &[Vec<String>], got: &[Vec<String>]) -> Verdict {
    for (i, (c, g)) in sent.iter().zip(got).enumerate() {
        if c[1] != g[0] {
            return Err(format!("record {i}: the decapsulated secret differs from the encapsulated one"));
        }
    }
    let distinct = |v: Vec<&String>| v.iter().collect::<std::collections::BTreeSet<_>>().len() == v.len();
    if !distinct(keys.iter().map(|k| &k[0]).collect()) || !distinct(sent.iter().map(|c| &c[0]).collect()) {
        return Err("different seeds gave the same public key or ciphertext".into());
    }
    Ok(())
}

impl Ctx<'_> {
    /// One operation over every record: `fields` hex fields per output line.
    fn op(&self, op: &str, lines: Vec<String>, fields: usize) -> Result<std::result::Result<Vec<Vec<String>>, String>> {
        let input = lines.iter().flat_map(|l| format!("{l}\n").into_bytes()).collect();
        let out = match self.run(DRIVER, &[op], input, OUTPUT_CAP)? {
            Ok(out) => out,
            Err(why) => return Ok(Err(why)),
        };
        let program = DRIVER.program;
        Ok(parse(&out, lines.len(), fields).map_err(|why| format!("`{program} {op}` printed {why}")))
    }
}

/// `records` lines of `fields` upper-case hex fields each, nothing else.
fn parse(out: &[u8], records: usize, fields: usize) -> std::result::Result<Vec<Vec<String>>, String> {
    let text = std::str::from_utf8(out).map_err(|_| "text that is not UTF-8".to_owned())?;
    let lines: Vec<Vec<String>> = text.lines().map(|l| l.split(' ').map(str::to_owned).collect()).collect();
    if lines.len() != records {
        return Err(format!("{} lines for {records} records", lines.len()));
    }
    for (i, line) in lines.iter().enumerate() {
        let hex = |f: &String| !f.is_empty() && f.len().is_multiple_of(2) && f.bytes().all(|b| b.is_ascii_hexdigit());
        if line.len() != fields || !line.iter().all(hex) {
            return Err(format!("line {i} that is not {fields} hex fields"));
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[&[&str]]) -> Vec<Vec<String>> {
        v.iter().map(|r| r.iter().map(|s| (*s).to_owned()).collect()).collect()
    }

    #[test]
    fn the_tool_compares_secrets_across_processes() {
        let keys = rows(&[&["P1", "S1"], &["P2", "S2"]]);
        let sent = rows(&[&["C1", "K1"], &["C2", "K2"]]);
        assert_eq!(compare(&keys, &sent, &rows(&[&["K1"], &["K2"]])), Ok(()));
        let e = compare(&keys, &sent, &rows(&[&["K1"], &["K9"]])).unwrap_err();
        assert!(e.starts_with("record 1:"), "{e}");
        let same = rows(&[&["P1", "S1"], &["P1", "S1"]]);
        assert!(compare(&same, &sent, &rows(&[&["K1"], &["K2"]])).is_err(), "a constant keygen is no KEM");
    }

    #[test]
    fn replay_output_is_exactly_the_records_asked_for() {
        assert_eq!(parse(b"AB 01\nCD 02\n", 2, 2).unwrap(), rows(&[&["AB", "01"], &["CD", "02"]]));
        // Canned KAT text, a missing line, a stray field, odd hex: all refused.
        assert!(parse(b"Count = 0\nSeed = 00\n", 2, 2).is_err());
        assert!(parse(b"AB 01\n", 2, 2).is_err());
        assert!(parse(b"AB 01 02\nCD 02\n", 2, 2).is_err());
        assert!(parse(b"ABC 01\nCD 02\n", 2, 2).is_err());
        assert!(parse(b"\xff\n", 1, 1).is_err());
    }

    #[test]
    fn seeds_are_fresh() {
        let (a, b) = (draw_seeds().unwrap(), draw_seeds().unwrap());
        assert_eq!(a.len(), RECORDS);
        assert!(a.iter().all(|s| s.len() == SEED_BYTES));
        assert_ne!(a, b);
    }
}
