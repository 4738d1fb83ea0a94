//! External sizes (`submissions/external_sizes.csv`) and the size audit: every place
//! where what an instance reports disagrees with the catalog.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::evidence::schema::Disagreement;
use crate::project;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sizes {
    pub pk: u64,
    pub sk: u64,
    pub ct: u64,
    pub ss: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CatalogRow {
    pub id: String,
    pub instance: String,
    pub sizes: Sizes,
    pub basis: Basis,
}

/// What a catalog size measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// The encoded object as the API returns it.
    Encoded,
    MaximumVariable,
    NominalVariable,
}

impl Basis {
    fn parse(s: &str) -> Option<Basis> {
        use serde::de::IntoDeserializer;
        let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> = s.into_deserializer();
        Basis::deserialize(de).ok()
    }
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Basis::Encoded => "encoded",
            Basis::MaximumVariable => "maximum-variable",
            Basis::NominalVariable => "nominal-variable",
        })
    }
}

/// Where an instance and the catalog disagree: one size, or the whole row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    PublicKey,
    SecretKey,
    Ciphertext,
    SharedSecret,
    /// The catalog has no row for the instance.
    Row,
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Field::PublicKey => "public_key",
            Field::SecretKey => "secret_key",
            Field::Ciphertext => "ciphertext",
            Field::SharedSecret => "shared_secret",
            Field::Row => "row",
        })
    }
}

pub fn catalog_path() -> camino::Utf8PathBuf {
    project::root().join("submissions/external_sizes.csv")
}

pub fn parse(text: &str) -> Result<Vec<CatalogRow>> {
    let mut rows = Vec::new();
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let header = lines.next().map(|(_, l)| l.trim()).unwrap_or_default();
    if header != "id,instance,public_key,secret_key,ciphertext,shared_secret,basis" {
        bail!("unexpected header {header:?}");
    }
    for (n, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let ctx = || format!("line {}: {line:?}", n + 1);
        if f.len() != 7 {
            bail!("{}: expected 7 fields", ctx());
        }
        let num = |i: usize| f[i].parse::<u64>().with_context(ctx);
        let basis = Basis::parse(f[6])
            .with_context(|| format!("{}: basis must be encoded, maximum-variable or nominal-variable", ctx()))?;
        rows.push(CatalogRow {
            id: f[0].into(),
            instance: f[1].into(),
            sizes: Sizes { pk: num(2)?, sk: num(3)?, ct: num(4)?, ss: num(5)? },
            basis,
        });
    }
    Ok(rows)
}

pub fn load() -> Result<Vec<CatalogRow>> {
    let path = catalog_path();
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    parse(&text).with_context(|| format!("invalid size catalog {path}"))
}

pub fn row<'a>(catalog: &'a [CatalogRow], id: &str, instance: &str) -> Option<&'a CatalogRow> {
    catalog.iter().find(|r| r.id == id && r.instance == instance)
}

/// Every field where the API size and the catalog differ, or a row that is missing.
pub fn audit(catalog: &[CatalogRow], id: &str, instance: &str, api: Sizes) -> Vec<Disagreement> {
    let Some(row) = row(catalog, id, instance) else {
        return vec![Disagreement {
            id: id.into(),
            instance: instance.into(),
            field: Field::Row,
            api: None,
            catalog: None,
            basis: None,
        }];
    };
    let fields = [
        (Field::PublicKey, api.pk, row.sizes.pk),
        (Field::SecretKey, api.sk, row.sizes.sk),
        (Field::Ciphertext, api.ct, row.sizes.ct),
        (Field::SharedSecret, api.ss, row.sizes.ss),
    ];
    fields
        .into_iter()
        .filter(|(_, a, c)| a != c)
        .map(|(field, a, c)| Disagreement {
            id: id.into(),
            instance: instance.into(),
            field,
            api: Some(a),
            catalog: Some(c),
            basis: Some(row.basis),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_catalog_parses_and_holds_the_seed_sizes() {
        let c = load().unwrap();
        let brqc = row(&c, "kem-07", "BRQC-128").unwrap();
        assert_eq!(brqc.sizes, Sizes { pk: 1954, sk: 2066, ct: 3844, ss: 64 });
        assert_eq!(row(&c, "kem-04", "bag_piglet_512").unwrap().sizes.ct, 8204);
    }

    #[test]
    fn audit_names_each_disagreeing_field() {
        let c = parse("id,instance,public_key,secret_key,ciphertext,shared_secret,basis\nx,a,10,20,30,4,encoded\n")
            .unwrap();
        let d = audit(&c, "x", "a", Sizes { pk: 10, sk: 20, ct: 46, ss: 4 });
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].field, d[0].api, d[0].catalog), (Field::Ciphertext, Some(46), Some(30)));
        assert_eq!(d[0].basis, Some(Basis::Encoded));
        assert_eq!(d[0].field, Field::Ciphertext);
        assert!(audit(&c, "x", "a", Sizes { pk: 10, sk: 20, ct: 30, ss: 4 }).is_empty());
        assert_eq!(audit(&c, "x", "b", Sizes::default())[0].field, Field::Row);
        assert!(parse("id,instance,public_key,secret_key,ciphertext,shared_secret,basis\nx,a,1,2,3,4,guess\n").is_err());
    }
}
