//! Values of a cuzk configuration file read strictly: sizes and durations cuzk would misread
//! without a word are errors, each naming its key and what to write instead.

use anyhow::{bail, Context, Result};
use toml::Value;
use zkforge_engine::parse_bytes;

pub(super) fn quoted(s: &str) -> String {
    Value::String(s.into()).to_string()
}

pub(super) fn string(v: &Value, key: &str) -> Result<String> {
    v.as_str()
        .map(str::to_string)
        .with_context(|| format!("{key} = {v}: a string is expected"))
}

pub(super) fn boolean(v: &Value, key: &str) -> Result<bool> {
    v.as_bool()
        .with_context(|| format!("{key} = {v}: true or false is expected"))
}

/// A non-negative integer (cuzk's u32 and u64 fields).
pub(super) fn count(v: &Value, key: &str) -> Result<u64> {
    v.as_integer()
        .and_then(|n| u64::try_from(n).ok())
        .with_context(|| format!("{key} = {v}: a whole number, 0 or more, is expected"))
}

pub(super) fn integers(v: &Value, key: &str) -> Result<Vec<u64>> {
    let list = v
        .as_array()
        .with_context(|| format!("{key} = {v}: a list of GPU ordinals is expected"))?;
    list.iter().map(|x| count(x, key)).collect()
}

/// A size as cuzk writes it, as the native file writes it. What cuzk reads right is read
/// ("50GiB", "626MiB", cuzk's decimal "64GB" and "512MB", plain bytes), and so are zkforge's
/// KiB and TiB; anything else is an error, where cuzk took 50 GiB or 0 silently.
pub(super) fn cuzk_size(key: &str, s: &str) -> Result<String> {
    let t = s.trim();
    let decimal = [("GB", 1_000_000_000u64), ("MB", 1_000_000)];
    for (unit, scale) in decimal {
        if let Some(n) = t.strip_suffix(unit) {
            if let Ok(n) = n.trim().parse::<u64>() {
                let bytes = n
                    .checked_mul(scale)
                    .with_context(|| format!("{key} = {s:?} overflows"))?;
                return Ok(bytes.to_string());
            }
        }
    }
    match parse_bytes(t) {
        Ok(_) => Ok(t.replace(' ', "")),
        Err(e) => bail!(
            "{key} = {s:?} is not a size ({e}): write it with a unit both cuzk and zkforge \
             read, such as \"256GiB\" or \"512MiB\" (cuzk would have taken 50 GiB or 0 \
             without a word)"
        ),
    }
}

/// A duration as cuzk writes it: "5m", "300s" or seconds; anything else is an error, where
/// cuzk took 5 minutes without a word.
pub(super) fn cuzk_duration(key: &str, v: &Value) -> Result<u64> {
    if let Some(n) = v.as_integer() {
        return u64::try_from(n).with_context(|| format!("{key} = {v}: not a duration"));
    }
    let s = string(v, key)?;
    let t = s.trim();
    let (digits, scale) = match (t.strip_suffix('m'), t.strip_suffix('s')) {
        (Some(n), _) => (n, 60),
        (_, Some(n)) => (n, 1),
        _ => (t, 1),
    };
    let n: u64 = digits.trim().parse().map_err(|_| {
        anyhow::anyhow!(
            "{key} = {v}: not a duration (\"5m\", \"300s\" or a number of seconds); cuzk \
             would have taken 5 minutes without a word"
        )
    })?;
    Ok(n * scale)
}
