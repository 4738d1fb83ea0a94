//! Signatures: the verify contract that runs after a matching digest. The KAT text
//! shows only that verify accepted the record's own signature; a verifier that accepts
//! anything passes it. `drivers/sig_contract.c` signs messages drawn at run time and
//! reports verify's return value on the signature, a modified message, a modified
//! signature and another record's key; the tool judges them here, against the API's
//! contract (0 valid, -1 invalid).

use anyhow::Result;

use super::{CheckCtx as Ctx, Corroboration, Driver};
use crate::evidence::schema::{Check, CheckVerdict};
use crate::project;

const DRIVER: Driver = Driver { source: "sig_contract.c", program: "sig_contract" };

pub const CONTRACT: Corroboration = Corroboration {
    driver: DRIVER,
    name: "verify contract",
    failure_is_mismatch: false,
    on_mismatch: true,
    holds: "verify returned 0 on each signature and -1 on a modified message, a modified signature and \
            another record's key (messages drawn at run time)",
    absent: "no verify contract (the manifest gives no API to check it through)",
    run,
};

const RECORDS: usize = 4;
const SEED_BYTES: usize = 48;
const MESSAGE_BYTES: usize = 33;
/// A few short lines; more is not the contract program.
const OUTPUT_CAP: u64 = 1 << 20;

/// The four cases, in the program's column order, with what each must return.
const CASES: [(&str, i64); 4] = [
    ("its own signature", 0),
    ("a modified message", -1),
    ("a modified signature", -1),
    ("another record's public key", -1),
];

fn run(ctx: &Ctx) -> Result<Check> {
    let nonce = project::hex(&random(16)?);
    let seeds: Vec<String> = (0..RECORDS)
        .map(|_| Ok(format!("{} {}", upper(&random(SEED_BYTES)?), upper(&random(MESSAGE_BYTES)?))))
        .collect::<Result<_>>()?;
    let (verdict, detail) = ctx.judged(DRIVER, &nonce, &seeds, OUTPUT_CAP, |out| Ok(judge(&parse(out, &nonce)?)))?;
    Ok(Check { check: CONTRACT.name.into(), seeds, verdict, detail })
}

fn random(n: usize) -> Result<Vec<u8>> {
    project::random_bytes(n)
}

fn upper(b: &[u8]) -> String {
    project::hex(b).to_ascii_uppercase()
}

/// One record's verify results, in `CASES` order.
type Row = [i64; 4];

/// Exactly one line per record, `<nonce> <k> <4 results> <sig_len>`, in order.
fn parse(out: &[u8], nonce: &str) -> std::result::Result<Vec<Row>, String> {
    let text = std::str::from_utf8(out).map_err(|_| "text that is not UTF-8".to_owned())?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != RECORDS {
        return Err(format!("{} lines for {RECORDS} records", lines.len()));
    }
    let mut rows = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let f: Vec<&str> = line.split(' ').collect();
        let nums: Option<Vec<i64>> = f.iter().skip(1).map(|x| x.parse().ok()).collect();
        match nums {
            Some(n) if f.len() == 7 && f[0] == nonce && n[0] == k as i64 && n[5] >= 0 => {
                rows.push([n[1], n[2], n[3], n[4]]);
            }
            _ => return Err(format!("line {k} that is not `<nonce> {k} <four results> <length>`")),
        }
    }
    Ok(rows)
}

/// Accepting an invalid signature outweighs any other breach; the first case that broke
/// the contract is named with its value.
fn judge(rows: &[Row]) -> (CheckVerdict, String) {
    let mut accepts = Vec::new();
    let mut breaches = Vec::new();
    for (k, row) in rows.iter().enumerate() {
        for (&got, (case, due)) in row.iter().zip(CASES) {
            if got == due {
                continue;
            }
            let line = format!("record {k}: verify returned {got} on {case} (the API demands {due})");
            if due == -1 && got == 0 {
                accepts.push(line)
            } else {
                breaches.push(line)
            }
        }
    }
    if let Some(first) = accepts.first() {
        return (CheckVerdict::AcceptsInvalid, format!("{first}; {} such results", accepts.len()));
    }
    if let Some(first) = breaches.first() {
        return (CheckVerdict::Breach, format!("{first}; {} results outside the contract", breaches.len()));
    }
    (CheckVerdict::Holds, format!("{} records: {}", rows.len(), CONTRACT.holds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(rows: &[[i64; 4]], nonce: &str) -> Vec<u8> {
        let text: String = rows
            .iter()
            .enumerate()
            .map(|(k, r)| format!("{nonce} {k} {} {} {} {} 64\n", r[0], r[1], r[2], r[3]))
            .collect();
        text.into_bytes()
    }

    #[test]
    fn the_contract_is_judged_by_the_tool() {
        let good = [[0, -1, -1, -1]; RECORDS];
        assert_eq!(judge(&parse(&lines(&good, "ab"), "ab").unwrap()).0, CheckVerdict::Holds);
        let mut any = good;
        any[2] = [0, 0, 0, 0];
        let (v, why) = judge(&any);
        assert_eq!(v, CheckVerdict::AcceptsInvalid);
        assert!(why.starts_with("record 2: verify returned 0 on a modified message"), "{why}");
        let mut one = good;
        one[0][2] = 1;
        let (v, why) = judge(&one);
        assert_eq!(v, CheckVerdict::Breach);
        assert!(why.contains("returned 1 on a modified signature"), "{why}");
        let mut own = good;
        own[1][0] = -1;
        assert_eq!(judge(&own).0, CheckVerdict::Breach, "rejecting its own signature breaks the contract");
    }

    #[test]
    fn only_the_programs_own_lines_count() {
        let good = [[0, -1, -1, -1]; RECORDS];
        // Lines a library printed without the nonce, a missing record, records out of
        // order, stray text: all refused.
        assert!(parse(&lines(&good, "00"), "ab").is_err());
        assert!(parse(&lines(&good[..3], "ab"), "ab").is_err());
        let mut text = lines(&good, "ab");
        text.extend_from_slice(b"ab 0 0 -1 -1 -1 64\n");
        assert!(parse(&text, "ab").is_err());
        let swapped = String::from_utf8(lines(&good, "ab")).unwrap().replacen("ab 0 ", "ab 9 ", 1);
        assert!(parse(swapped.as_bytes(), "ab").is_err());
        assert!(parse(b"Count = 0\n", "ab").is_err());
    }
}
