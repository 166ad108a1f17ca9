//! Reads cases from stdin, one a line: `kind <TAB> unit <TAB> hex(input)`, and writes each with
//! the Rust parser's answer appended: `<TAB> expected`, PostgreSQL-epoch microseconds (a
//! timestamptz datum), `t`/`f` for `datestring`, or `NULL`.
//!
//! kinds: `date` (parse_datestring), `datestring` (is_datestring), `number` and `jnumber`
//! (parse_unix_number; a jnumber line carries numeric_normalize's text of a JSON number),
//! `long` (parse_unix_integer_string), `rowsec` (row_ttl::row_seconds, printed as f64).
use jsonb_ttl_core::parse::{self, NumericUnit};
use jsonb_ttl_core::row_ttl;
use std::io::{BufRead, Write};

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "NULL".to_string(), |v| v.to_string())
}

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for line in stdin.lock().lines() {
        let line = line.expect("line");
        let mut f = line.split('\t');
        let (kind, unit, hex) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap_or(""));
        // (a fourth field, the input the SQL side reads, is carried through)
        let bytes = unhex(hex);
        let text = String::from_utf8_lossy(&bytes);
        let unit = NumericUnit::from_name(unit).unwrap_or(NumericUnit::Seconds);
        let expected = match kind {
            "date" => opt(parse::parse_datestring(&text)),
            "datestring" => (if parse::is_datestring(&text) { "t" } else { "f" }).to_string(),
            "number" | "jnumber" => opt(parse::parse_unix_number(&text, unit)),
            "long" => opt(parse::parse_unix_integer_string(&text, unit)),
            "rowsec" => opt(row_ttl::row_seconds(&text)),
            other => panic!("unknown kind {other}"),
        };
        writeln!(out, "{line}\t{expected}").unwrap();
    }
}
