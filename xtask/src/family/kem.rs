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

/// The decapsulation of tampered ciphertexts (liboqs's `test_kem` idea): one bit flipped
/// at the first, middle and last byte of each record's ciphertext, every one decapsulated
/// twice in one process. Each must give another secret than the encapsulated one, the
/// same on repeat (implicit rejection), or a failed call (explicit rejection); a crash,
/// the encapsulated secret, or a secret that changes on repeat fails.
pub const TAMPER: Corroboration = Corroboration {
    driver: DRIVER,
    name: "tampered ciphertexts",
    failure_is_mismatch: false,
    on_mismatch: true,
    holds: "decapsulation of tampered ciphertexts (one bit flipped at the first, middle and last byte, each \
            decapsulated twice) gave another secret, the same on repeat, or a rejection",
    absent: "no tampered-ciphertext check (the manifest gives no API to reach dec through)",
    run: tamper,
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

/// Key pairs (`<pk> <sk>`) and encapsulations (`<ct> <ss>`) for `seeds`, in two processes.
type Encapsulated = (Vec<Vec<String>>, Vec<Vec<String>>);

fn encapsulated(ctx: &Ctx, seeds: &[String]) -> Result<std::result::Result<Encapsulated, String>> {
    let keys = match ctx.op("keygen", seeds.to_vec(), 2)? {
        Ok(k) => k,
        Err(why) => return Ok(Err(why)),
    };
    let enc_in = seeds.iter().zip(&keys).map(|(s, k)| format!("{s} {}", k[0])).collect();
    Ok(ctx.op("enc", enc_in, 2)?.map(|sent| (keys, sent)))
}

fn replay(ctx: &Ctx, seeds: &[String]) -> Result<Verdict> {
    let (keys, sent) = match encapsulated(ctx, seeds)? {
        Ok(e) => e,
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

/// Tamper with fresh records' ciphertexts and decapsulate them; a failure of the
/// program is the verdict, an engine failure or an interruption an error.
fn tamper(ctx: &Ctx) -> Result<Check> {
    let seeds = draw_seeds()?;
    let hex_seeds: Vec<String> = seeds.iter().map(|s| project::hex(s).to_ascii_uppercase()).collect();
    let (verdict, detail) = match tampered(ctx, &hex_seeds)? {
        Ok(detail) => (CheckVerdict::Holds, detail),
        Err(why) => (CheckVerdict::Fails, why),
    };
    Ok(Check { check: TAMPER.name.into(), seeds: hex_seeds, verdict, detail })
}

fn tampered(ctx: &Ctx, seeds: &[String]) -> Result<std::result::Result<String, String>> {
    let (keys, sent) = match encapsulated(ctx, seeds)? {
        Ok(e) => e,
        Err(why) => return Ok(Err(why)),
    };
    let cases = flips(&keys, &sent);
    // Each tampered line twice, in one run: the second answer must be the first.
    let lines: Vec<String> = cases.iter().chain(&cases).map(|c| c.line.clone()).collect();
    let out = match ctx.run(
        DRIVER,
        &["reject"],
        lines.iter().flat_map(|l| format!("{l}\n").into_bytes()).collect(),
        OUTPUT_CAP,
    )? {
        Ok(out) => out,
        Err(why) => return Ok(Err(format!("on a tampered ciphertext: {why}"))),
    };
    let got = match parse_answers(&out, lines.len()) {
        Ok(g) => g,
        Err(why) => return Ok(Err(format!("`{} reject` printed {why}", DRIVER.program))),
    };
    Ok(judge_tampered(&cases, &got))
}

/// One tampered ciphertext: the record, where its bit was flipped, the line sent, and
/// the secret encapsulated with the untampered one.
struct Flip {
    record: usize,
    byte: usize,
    line: String,
    sent_ss: String,
}

/// Bit `record % 8` flipped at the first, middle and last byte of each ciphertext.
fn flips(keys: &[Vec<String>], sent: &[Vec<String>]) -> Vec<Flip> {
    let mut out = Vec::new();
    for (record, (k, c)) in keys.iter().zip(sent).enumerate() {
        let ct = hex_bytes(&c[0]);
        let last = ct.len().saturating_sub(1);
        let bytes: std::collections::BTreeSet<usize> = [0, ct.len() / 2, last].into();
        for byte in bytes {
            let mut t = ct.clone();
            t[byte] ^= 1 << (record % 8);
            let line = format!("{} {}", k[1], project::hex(&t).to_ascii_uppercase());
            out.push(Flip { record, byte, line, sent_ss: c[1].clone() });
        }
    }
    out
}

fn hex_bytes(h: &str) -> Vec<u8> {
    (0..h.len() / 2).map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap_or(0)).collect()
}

/// `lines` answers, each one hex field or `REJECTED`.
fn parse_answers(out: &[u8], lines: usize) -> std::result::Result<Vec<Option<String>>, String> {
    let text = std::str::from_utf8(out).map_err(|_| "text that is not UTF-8".to_owned())?;
    let got: Vec<&str> = text.lines().collect();
    if got.len() != lines {
        return Err(format!("{} lines for {lines} tampered ciphertexts", got.len()));
    }
    let hex = |f: &str| !f.is_empty() && f.len().is_multiple_of(2) && f.bytes().all(|b| b.is_ascii_hexdigit());
    got.iter()
        .enumerate()
        .map(|(i, l)| match *l {
            "REJECTED" => Ok(None),
            l if hex(l) => Ok(Some(l.to_owned())),
            _ => Err(format!("line {i} that is neither one hex field nor REJECTED")),
        })
        .collect()
}

/// The verdict on the answers to `cases` sent twice (`got`: the first round, then the
/// second): the detail of a holding check, or the first case that failed.
fn judge_tampered(cases: &[Flip], got: &[Option<String>]) -> std::result::Result<String, String> {
    let (first, second) = got.split_at(cases.len());
    let (mut implicit, mut explicit) = (0, 0);
    for ((c, a), b) in cases.iter().zip(first).zip(second) {
        let at = format!("record {}, byte {} flipped", c.record, c.byte);
        if a != b {
            return Err(format!("{at}: the two decapsulations differ (no fixed answer to a tampered ciphertext)"));
        }
        match a {
            None => explicit += 1,
            Some(ss) if *ss == c.sent_ss => {
                return Err(format!("{at}: dec returned the encapsulated secret for the tampered ciphertext"))
            }
            Some(_) => implicit += 1,
        }
    }
    Ok(format!(
        "{} tampered ciphertexts, each decapsulated twice: {implicit} gave another secret, the same on repeat; \
         {explicit} rejected",
        cases.len()
    ))
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
    fn tampered_ciphertexts_are_judged_by_the_tool() {
        let keys = rows(&[&["P1", "5E"], &["P2", "5F"]]);
        let sent = rows(&[&["A0B1C2", "11"], &["0F", "22"]]);
        let cases = flips(&keys, &sent);
        // Three bytes of the first ciphertext (bit 0), one of the second (bit 1).
        let lines: Vec<&str> = cases.iter().map(|c| c.line.as_str()).collect();
        assert_eq!(lines, ["5E A1B1C2", "5E A0B0C2", "5E A0B1C3", "5F 0D"]);
        let answers = |v: &[Option<&str>]| v.iter().map(|a| a.map(str::to_owned)).collect::<Vec<_>>();
        let other = answers(&[Some("99"), None, Some("98"), Some("97")]);
        let ok = judge_tampered(&cases, &[other.clone(), other.clone()].concat()).unwrap();
        assert!(ok.contains("3 gave another secret") && ok.contains("1 rejected"), "{ok}");
        // The encapsulated secret back for a tampered ciphertext.
        let leaky = answers(&[Some("99"), Some("99"), Some("11"), Some("97")]);
        let e = judge_tampered(&cases, &[leaky.clone(), leaky].concat()).unwrap_err();
        assert!(e.starts_with("record 0, byte 2 flipped: dec returned the encapsulated secret"), "{e}");
        // Another answer on repeat.
        let again = answers(&[Some("99"), None, Some("98"), Some("96")]);
        let e = judge_tampered(&cases, &[other, again].concat()).unwrap_err();
        assert!(e.starts_with("record 1, byte 0 flipped: the two decapsulations differ"), "{e}");
        assert_eq!(parse_answers(b"AB\nREJECTED\n", 2).unwrap(), answers(&[Some("AB"), None]));
        assert!(parse_answers(b"AB\nrejected\n", 2).is_err() && parse_answers(b"AB\n", 2).is_err());
    }

    #[test]
    fn seeds_are_fresh() {
        let (a, b) = (draw_seeds().unwrap(), draw_seeds().unwrap());
        assert_eq!(a.len(), RECORDS);
        assert!(a.iter().all(|s| s.len() == SEED_BYTES));
        assert_ne!(a, b);
    }
}
