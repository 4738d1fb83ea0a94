//! Key exchange: the length contract that runs beside the KAT digest, and the bandwidth
//! table of page §6. A pass that never sets the length of the message it sends leaves
//! whatever the caller preset: the official KAT driver's 0 (so the published text still
//! matches) or a timing harness's buffer capacity (a "phantom" message that inflates
//! its bandwidth). `drivers/kex_contract.c` runs each exchange twice from a seed drawn at
//! run time, with the lengths preset to 0 and to capacity; the tool judges it here.
//! The same driver's `tamper` mode runs exchanges with one pass message tampered with in
//! transit ([`TAMPER`]).

use anyhow::Result;

use super::{CheckCtx as Ctx, Corroboration, Driver};
use crate::evidence::schema::{Check, CheckVerdict, Record};
use crate::project;

const DRIVER: Driver = Driver { source: "kex_contract.c", program: "kex_contract" };

pub const CONTRACT: Corroboration = Corroboration {
    driver: DRIVER,
    name: "length contract",
    failure_is_mismatch: false,
    on_mismatch: true,
    holds: "every pass set the length of the message it sent and both sides derived the same secret, with the \
            lengths preset to 0 and to the buffer capacity (seeds drawn at run time)",
    absent: "no length contract (the manifest gives no API to check it through)",
    run,
};

/// A key exchange's tampered inputs: exchanges from seeds drawn at run time in which one
/// bit of one pass message is flipped after its sender sent it (first, middle and last
/// byte of every message), so that the next pass and the receiver's derivation get the
/// tampered bytes; each exchange runs twice in one process. The two sides must end with
/// different secrets, the same on repeat, or a call must refuse (a rejection); the same
/// secret on both sides means the protocol never read the bit.
pub const TAMPER: Corroboration = Corroboration {
    driver: DRIVER,
    name: "tampered passes",
    failure_is_mismatch: false,
    on_mismatch: true,
    holds: "exchanges with one pass message tampered with (one bit flipped at its first, middle and last byte, \
            each exchange run twice) gave the two sides different secrets, the same on repeat, or a rejection",
    absent: "no tampered-pass check (the manifest gives no API to run the exchange through)",
    run: tamper,
};

const RECORDS: usize = 3;
const SEED_BYTES: usize = 64;
const OUTPUT_CAP: u64 = 1 << 20;

fn run(ctx: &Ctx) -> Result<Check> {
    let nonce = project::hex(&project::random_bytes(16)?);
    let seeds: Vec<String> = (0..RECORDS)
        .map(|_| Ok(project::hex(&project::random_bytes(SEED_BYTES)?).to_ascii_uppercase()))
        .collect::<Result<_>>()?;
    let (verdict, detail) = ctx.judged(DRIVER, &nonce, &seeds, OUTPUT_CAP, |out| Ok(judge(&parse(out, &nonce)?)))?;
    Ok(Check { check: CONTRACT.name.into(), seeds, verdict, detail })
}

/// One record: the message buffers' capacity (the declared total), whether the secrets
/// agreed with each preset, and per pass the length returned with the preset 0 and with
/// the preset capacity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub capacity: u64,
    pub agree: [bool; 2],
    pub lengths: Vec<(u64, u64)>,
}

/// Exactly one line per record, `<nonce> <k> <passes> <total> <agree_0> <agree_cap> <pairs>`.
fn parse(out: &[u8], nonce: &str) -> std::result::Result<Vec<Row>, String> {
    let text = std::str::from_utf8(out).map_err(|_| "text that is not UTF-8".to_owned())?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != RECORDS {
        return Err(format!("{} lines for {RECORDS} records", lines.len()));
    }
    lines.iter().enumerate().map(|(k, line)| parse_line(line, nonce, k)).collect()
}

fn parse_line(line: &str, nonce: &str, k: usize) -> std::result::Result<Row, String> {
    let bad = || format!("line {k} that is not `<nonce> {k} <passes> <total> <agree> <agree> <lengths>`");
    let f: Vec<&str> = line.split(' ').collect();
    let nums: Option<Vec<u64>> = f.iter().skip(1).map(|x| x.parse().ok()).collect();
    let n = nums.ok_or_else(bad)?;
    let passes = *n.get(1).ok_or_else(bad)? as usize;
    let flags_ok = n.len() >= 5 && n[3] <= 1 && n[4] <= 1;
    if f[0] != nonce || n[0] != k as u64 || !flags_ok || passes > 8 || n.len() != 5 + 2 * passes {
        return Err(bad());
    }
    let lengths = n[5..].chunks(2).map(|c| (c[0], c[1])).collect();
    Ok(Row { capacity: n[2], agree: [n[3] == 1, n[4] == 1], lengths })
}

/// An unset length outweighs a length that depends on the preset; disagreeing secrets
/// are named too.
pub fn judge(rows: &[Row]) -> (CheckVerdict, String) {
    let mut breaches = Vec::new();
    for (k, row) in rows.iter().enumerate() {
        for (j, &(zero, cap)) in row.lengths.iter().enumerate() {
            let pass = j + 1;
            if zero == cap {
                continue;
            }
            let line = if zero == 0 && cap == row.capacity {
                format!(
                    "record {k}: pass {pass} never set the length of its message: the preset stayed (0, or {cap} \
                     with a capacity preset, a phantom message a harness presetting capacity counts as bandwidth)"
                )
            } else {
                format!("record {k}: message {pass} is {zero} bytes with the length preset to 0 and {cap} with it preset to capacity")
            };
            breaches.push(line);
        }
        for (preset, agreed) in ["0", "capacity"].iter().zip(row.agree) {
            if !agreed {
                breaches
                    .push(format!("record {k}: the two sides derived different secrets (lengths preset to {preset})"));
            }
        }
    }
    match breaches.first() {
        Some(first) => (CheckVerdict::Breach, format!("{first}; {} findings", breaches.len())),
        None => (CheckVerdict::Holds, format!("{} records: {}", rows.len(), CONTRACT.holds)),
    }
}

/// One case the driver runs: message `k` of record `record`'s exchange (0: none) with
/// bit `bit` flipped at its first, middle or last byte (`at` 0, 1, 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Case {
    record: usize,
    k: u32,
    at: u64,
    bit: u32,
}

/// What one run of a case ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Both secrets, hex.
    Keys(String, String),
    /// The first call that refused: a pass's number, or `a`/`b` for a derivation.
    Rejected(String),
}

/// The driver's answer to one case.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// `k` is above the instance's passes.
    Beyond,
    /// Message `k` had no byte to flip.
    Empty,
    Ran {
        len: u64,
        byte: u64,
        runs: [Outcome; 2],
    },
}

/// Every record's untampered exchange, then each of the most passes the drivers know at
/// each of three bytes: the host does not know an instance's passes, the driver says
/// `beyond` for the ones it lacks.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for record in 0..RECORDS {
        let bit = (record % 8) as u32;
        out.push(Case { record, k: 0, at: 0, bit });
        for k in 1..=super::MAX_PASSES {
            out.extend((0..3).map(|at| Case { record, k, at, bit }));
        }
    }
    out
}

/// The byte of a `len`-byte message that `at` names (as the driver's `tamper_byte`).
fn tamper_byte(len: u64, at: u64) -> u64 {
    [0, len / 2, len.saturating_sub(1)][at as usize]
}

fn tamper(ctx: &Ctx) -> Result<Check> {
    let nonce = project::hex(&project::random_bytes(16)?);
    let seeds: Vec<String> = (0..RECORDS)
        .map(|_| Ok(project::hex(&project::random_bytes(SEED_BYTES)?).to_ascii_uppercase()))
        .collect::<Result<_>>()?;
    let cases = cases();
    let mut input = format!("{nonce}\n");
    for c in &cases {
        input.push_str(&format!("{} {} {} {}\n", seeds[c.record], c.k, c.at, c.bit));
    }
    let (verdict, detail) = match ctx.run(DRIVER, &["tamper"], input.into_bytes(), OUTPUT_CAP)? {
        Err(why) => (CheckVerdict::Fails, format!("in the tampered-pass run: {why}")),
        Ok(out) => match parse_tampered(&out, &nonce, cases.len()).and_then(|a| judge_tampered(&cases, &a)) {
            Ok(detail) => (CheckVerdict::Holds, detail),
            Err(why) => (CheckVerdict::Fails, why),
        },
    };
    Ok(Check { check: TAMPER.name.into(), seeds, verdict, detail })
}

/// One answer line per case, `<nonce> <i> <passes> beyond|empty|<len> <byte> <o1> <o2>`;
/// the instance's passes with the answers.
fn parse_tampered(out: &[u8], nonce: &str, n: usize) -> std::result::Result<(u32, Vec<Answer>), String> {
    let program = DRIVER.program;
    let text = std::str::from_utf8(out).map_err(|_| format!("`{program} tamper` printed text that is not UTF-8"))?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != n {
        return Err(format!("`{program} tamper` printed {} lines for {n} cases", lines.len()));
    }
    let mut passes = None;
    let answers = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let (p, a) = parse_answer(line, nonce, i)
                .ok_or_else(|| format!("`{program} tamper` printed line {i} that is not an answer to case {i}"))?;
            match passes.replace(p) {
                Some(q) if q != p => Err(format!("`{program} tamper` said {q} passes, then {p}")),
                _ => Ok(a),
            }
        })
        .collect::<std::result::Result<_, _>>()?;
    Ok((passes.unwrap_or(0), answers))
}

fn parse_answer(line: &str, nonce: &str, i: usize) -> Option<(u32, Answer)> {
    let f: Vec<&str> = line.split(' ').collect();
    if f.len() < 4 || f[0] != nonce || f[1] != i.to_string() {
        return None;
    }
    let passes: u32 = f[2].parse().ok().filter(|p| *p <= super::MAX_PASSES)?;
    let answer = match &f[3..] {
        ["beyond"] => Answer::Beyond,
        ["empty"] => Answer::Empty,
        [len, byte, o1, o2] => {
            Answer::Ran { len: len.parse().ok()?, byte: byte.parse().ok()?, runs: [outcome(o1)?, outcome(o2)?] }
        }
        _ => return None,
    };
    Some((passes, answer))
}

fn outcome(field: &str) -> Option<Outcome> {
    let (x, y) = field.split_once(':')?;
    let hex = |f: &str| f.len().is_multiple_of(2) && f.bytes().all(|b| b.is_ascii_hexdigit());
    match x {
        "rejected" if y == "a" || y == "b" || y.parse::<u32>().is_ok_and(|k| (1..=super::MAX_PASSES).contains(&k)) => {
            Some(Outcome::Rejected(y.to_owned()))
        }
        _ if hex(x) && hex(y) => Some(Outcome::Keys(x.to_owned(), y.to_owned())),
        _ => None,
    }
}

/// The verdict on the answers: the detail of a holding check, or the first case that
/// failed (the untampered exchanges first: without agreement there, nothing is judged).
fn judge_tampered(cases: &[Case], (passes, answers): &(u32, Vec<Answer>)) -> std::result::Result<String, String> {
    let mut untampered = vec![None; RECORDS];
    let (mut differ, mut rejected, mut empty) = (0, 0, 0);
    let mut flipped = std::collections::BTreeSet::new();
    for (c, a) in cases.iter().zip(answers) {
        let Some((len, byte, runs)) = shape(c, *passes, a)? else {
            empty += usize::from(*a == Answer::Empty);
            continue;
        };
        if c.k == 0 {
            untampered[c.record] = Some(agreed(c.record, runs)?);
            continue;
        }
        let at = format!("record {}, message {} ({len} bytes), bit {} of byte {byte} flipped", c.record, c.k, c.bit);
        if runs[0] != runs[1] {
            return Err(format!("{at}: the two runs of the same exchange differ"));
        }
        flipped.insert((c.record, c.k, byte));
        match &runs[0] {
            Outcome::Rejected(step) if step.parse::<u32>().is_ok_and(|j| j <= c.k) => {
                return Err(format!("{at}: pass {step} refused before the tampered message reached it"))
            }
            Outcome::Rejected(_) => rejected += 1,
            Outcome::Keys(x, y) if x == y => {
                let same = untampered[c.record].as_ref() == Some(x);
                let what = if same { "the untampered exchange's secret" } else { "the same secret" };
                return Err(format!("{at}: both sides derived {what} (the tampered bit was never read)"));
            }
            Outcome::Keys(..) => differ += 1,
        }
    }
    let skipped = if empty > 0 { format!("; {empty} empty messages left alone") } else { String::new() };
    Ok(format!(
        "{} exchanges with one bit of a pass message flipped ({passes} passes, {RECORDS} records), each run twice: \
         {differ} gave the two sides different secrets, the same on repeat; {rejected} rejected{skipped}",
        flipped.len()
    ))
}

/// A case that ran: the message's length, the byte flipped, the two runs' outcomes.
type Ran<'a> = (u64, u64, &'a [Outcome; 2]);

/// A case's answer checked against what was asked: `beyond` exactly for the passes the
/// instance lacks, `empty` only for a message, the byte the driver says it flipped the
/// one asked for. None when nothing ran.
fn shape<'a>(c: &Case, passes: u32, a: &'a Answer) -> std::result::Result<Option<Ran<'a>>, String> {
    let bad = |what: &str| Err(format!("record {}, message {}: the driver answered {what}", c.record, c.k));
    match a {
        Answer::Beyond if c.k > passes => Ok(None),
        Answer::Beyond => bad("`beyond` for a pass the instance has"),
        _ if c.k > passes => bad("for a pass beyond the instance's"),
        Answer::Empty if c.k > 0 => Ok(None),
        Answer::Empty => bad("`empty` for the untampered exchange"),
        Answer::Ran { len, byte, runs } if c.k == 0 || *byte == tamper_byte(*len, c.at) => {
            Ok(Some((*len, *byte, runs)))
        }
        Answer::Ran { byte, .. } => bad(&format!("that it flipped byte {byte}")),
    }
}

/// The untampered exchange of `record`: both sides agree, the same on repeat.
fn agreed(record: usize, runs: &[Outcome; 2]) -> std::result::Result<String, String> {
    let untampered = format!("record {record}, untampered");
    match runs {
        [Outcome::Keys(x, y), again] if x == y && runs[0] == *again => Ok(x.clone()),
        [Outcome::Keys(x, y), _] if x == y => Err(format!("{untampered}: the two runs of the same exchange differ")),
        [Outcome::Keys(..), _] => Err(format!("{untampered}: the two sides derived different secrets")),
        [Outcome::Rejected(step), _] => Err(format!("{untampered}: step {step} refused")),
    }
}

/// Page §6 of a key exchange: passes, the messages as the API returned them, public
/// keys, bandwidth, the long-term secret key's API capacity and the shared secret.
pub fn bandwidth(records: &[&Record]) -> String {
    let mut w = String::from(
        "\nBandwidth, from one exchange on the reference seed (messages as the API returned them, lengths preset to 0; \
         a pass that never set its length is marked and counted as 0):\n\n\
         | instance | passes | messages (bytes; raw API) | protocol-message bytes | public key A / B | bandwidth (bytes) \
         | long-term sk (API cap) | shared secret |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in records {
        let (api, got) = (&r.sizes.api, &r.sizes.returned);
        let passes = api.get("passes");
        let unset = got.get("unset");
        let msgs: Vec<String> = (1..=passes)
            .map(|k| {
                let mark = if unset >> (k - 1) & 1 == 1 { " (never set)" } else { "" };
                format!("{}{mark}", got.get(&format!("m{k}")))
            })
            .collect();
        let protocol = got.get("msgs");
        let (pka, pkb) = (got.get("pk"), got.get("pkb"));
        w.push_str(&format!(
            "| {} | {passes} | {} | {protocol} | {pka} / {pkb} | {} | {} | {} |\n",
            crate::text::md(&r.label),
            if msgs.is_empty() { "none".to_owned() } else { msgs.join(" / ") },
            protocol + pka + pkb,
            api.get("sk"),
            got.get("ss")
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(nonce: &str, k: usize, agree: [u8; 2], pairs: &[(u64, u64)]) -> String {
        let p: String = pairs.iter().map(|(a, b)| format!(" {a} {b}")).collect();
        let total: u64 = pairs.iter().map(|(a, _)| a).sum::<u64>().max(pairs.iter().map(|p| p.1).max().unwrap_or(0));
        format!("{nonce} {k} {} {total} {} {}{p}\n", pairs.len(), agree[0], agree[1])
    }

    fn text(nonce: &str, agree: [u8; 2], pairs: &[(u64, u64)]) -> Vec<u8> {
        (0..RECORDS).map(|k| line(nonce, k, agree, pairs)).collect::<String>().into_bytes()
    }

    #[test]
    fn the_contract_is_judged_by_the_tool() {
        let good = parse(&text("ab", [1, 1], &[(32, 32), (40, 40)]), "ab").unwrap();
        assert_eq!(judge(&good).0, CheckVerdict::Holds);
        // As NGCC kex-02: pass 4 sends nothing and never sets its length.
        let unset = parse(&text("ab", [1, 1], &[(768, 768), (784, 784), (16, 16), (0, 1568)]), "ab").unwrap();
        let (v, why) = judge(&unset);
        assert_eq!(v, CheckVerdict::Breach);
        assert!(why.starts_with("record 0: pass 4 never set the length"), "{why}");
        let preset = parse(&text("ab", [1, 1], &[(32, 40)]), "ab").unwrap();
        assert!(judge(&preset).1.contains("message 1 is 32 bytes"), "depends on the preset");
        let differ = parse(&text("ab", [1, 0], &[(32, 32)]), "ab").unwrap();
        let (v, why) = judge(&differ);
        assert_eq!(v, CheckVerdict::Breach);
        assert!(why.contains("different secrets (lengths preset to capacity)"), "{why}");
        assert_eq!(judge(&parse(&text("ab", [1, 1], &[]), "ab").unwrap()).0, CheckVerdict::Holds, "0 passes");
    }

    #[test]
    fn only_the_programs_own_lines_count() {
        assert!(parse(&text("00", [1, 1], &[(1, 1)]), "ab").is_err(), "another nonce");
        let mut t = text("ab", [1, 1], &[(1, 1)]);
        t.extend_from_slice(line("ab", 3, [1, 1], &[(1, 1)]).as_bytes());
        assert!(parse(&t, "ab").is_err(), "an extra record");
        assert!(parse(b"ab 0 1 5 1 1 5\nab 1 1 5 1 1 5 5\nab 2 1 5 1 1 5 5\n", "ab").is_err(), "a missing length");
        assert!(parse(b"ab 0 0 0 2 1\nab 1 0 0 1 1\nab 2 0 0 1 1\n", "ab").is_err(), "a flag that is not 0 or 1");
        assert!(parse(&text("ab", [1, 1], &[(1, 1); 9]), "ab").is_err(), "more than 8 passes");
    }

    /// The driver's `tamper` answers for `cases()` on a `passes`-pass exchange whose
    /// message k has 8k bytes: `outcome` gives each tampered case's one outcome.
    fn tamper_text(nonce: &str, passes: u32, outcome: impl Fn(&Case, u64) -> String) -> Vec<u8> {
        let mut t = String::new();
        for (i, c) in cases().iter().enumerate() {
            let rest = match c.k {
                k if k > passes => "beyond".to_owned(),
                0 => "0 0 AA:AA AA:AA".to_owned(),
                k => {
                    let (len, o) = (8 * u64::from(k), outcome(c, tamper_byte(8 * u64::from(k), c.at)));
                    format!("{len} {} {o} {o}", tamper_byte(len, c.at))
                }
            };
            t.push_str(&format!("{nonce} {i} {passes} {rest}\n"));
        }
        t.into_bytes()
    }

    fn judged(text: &[u8]) -> std::result::Result<String, String> {
        judge_tampered(&cases(), &parse_tampered(text, "ab", cases().len())?)
    }

    #[test]
    fn tampered_passes_are_judged_by_the_tool() {
        // Honest: other secrets on the two sides, or a later pass or derivation refusing.
        let honest = tamper_text("ab", 2, |c, _| if c.k == 1 { "01:02".into() } else { "rejected:a".into() });
        let ok = judged(&honest).unwrap();
        assert!(
            ok.starts_with("18 exchanges") && ok.contains("9 gave the two sides") && ok.contains("9 rejected"),
            "{ok}"
        );
        // The last byte never read (as the fixture's FIX_IGNORE_TAIL): named with its byte.
        let deaf =
            tamper_text("ab", 2, |c, b| if b + 1 == 8 * u64::from(c.k) { "AA:AA".into() } else { "01:02".into() });
        let e = judged(&deaf).unwrap_err();
        let want = "record 0, message 1 (8 bytes), bit 0 of byte 7 flipped: both sides derived the untampered \
                    exchange's secret (the tampered bit was never read)";
        assert_eq!(e, want);
        let other = tamper_text("ab", 1, |_, _| "BB:BB".into());
        assert!(judged(&other)
            .unwrap_err()
            .ends_with("both sides derived the same secret (the tampered bit was never read)"));
        // A pass that refuses before the tampered message reached it is no rejection.
        let early = tamper_text("ab", 2, |c, _| format!("rejected:{}", c.k));
        assert!(judged(&early).unwrap_err().contains("pass 1 refused before the tampered message"));
        assert!(judged(&tamper_text("ab", 2, |c, _| format!("rejected:{}", c.k + 1))).is_ok());
        // No answer that changes on repeat.
        let mut flaky = String::from_utf8(honest.clone()).unwrap();
        flaky = flaky.replacen("01:02 01:02", "01:02 01:03", 1);
        assert!(judged(flaky.as_bytes()).unwrap_err().contains("the two runs of the same exchange differ"));
        // 0 passes: the untampered exchanges alone, said so.
        let none = judged(&tamper_text("ab", 0, |_, _| unreachable!())).unwrap();
        assert!(none.starts_with("0 exchanges") && none.contains("(0 passes"), "{none}");
    }

    #[test]
    fn tampered_answers_must_be_the_ones_asked_for() {
        let good = String::from_utf8(tamper_text("ab", 2, |_, _| "01:02".into())).unwrap();
        let bad = |from: &str, to: &str| judged(good.replacen(from, to, 1).as_bytes());
        assert!(judged(good.as_bytes()).is_ok());
        assert!(bad("0 0 AA:AA AA:AA", "0 0 AA:AB AA:AB").unwrap_err().contains("untampered: the two sides derived"));
        assert!(bad("0 0 AA:AA AA:AA", "0 0 rejected:1 rejected:1").unwrap_err().contains("step 1 refused"));
        assert!(bad("ab 0 2", "cd 0 2").unwrap_err().contains("not an answer to case 0"), "another nonce");
        assert!(bad("ab 1 2", "ab 2 2").is_err(), "out of order");
        assert!(bad("ab 7 2 beyond", "ab 7 2 empty").unwrap_err().contains("beyond the instance's"));
        assert!(bad("ab 4 2 16 0 01:02 01:02", "ab 4 2 beyond")
            .unwrap_err()
            .contains("`beyond` for a pass the instance has"));
        assert!(bad("ab 4 2 16 0", "ab 4 2 16 3").unwrap_err().contains("flipped byte 3"), "another byte");
        assert!(bad("ab 1 2 8 0", "ab 1 3 8 0").unwrap_err().contains("said 2 passes, then 3"));
        assert!(bad("ab 0 2 0 0 AA:AA AA:AA", "ab 0 2 empty").unwrap_err().contains("`empty` for the untampered"));
        assert!(bad("01:02 01:02", "01:0 01:0").is_err(), "odd hex");
        assert!(bad("01:02 01:02", "rejected:9 rejected:9").is_err(), "no pass 9");
        let short = good.lines().skip(1).map(|l| format!("{l}\n")).collect::<String>();
        assert!(judged(short.as_bytes()).unwrap_err().contains("lines for 75 cases"));
    }
}
