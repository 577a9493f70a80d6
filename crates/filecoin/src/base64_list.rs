//! Vanilla proofs as Curio sends them in one field: a JSON array of base64 strings. The list
//! comes from a client, so its length is bounded while it is read: a list of 100 million empty
//! strings must cost neither 100 million `String`s nor any base64 decoding before it is refused.

use std::borrow::Cow;
use std::fmt;

use anyhow::{Context, Result};
use base64::Engine as _;
use serde::de::{self, Deserializer as _, IgnoredAny, SeqAccess, Visitor};

/// Decodes a JSON array of base64 strings holding at most `max_entries` entries (for a request,
/// [`max_vanilla_proofs`](crate::max_vanilla_proofs) of its kind and size). A longer list is
/// refused as soon as entry `max_entries + 1` is seen, before any entry is decoded; the strings
/// are borrowed from `bytes` while the list is read (copied only when JSON escapes make that
/// necessary), so reading costs one pointer and length per entry.
pub fn decode_base64_list(bytes: &[u8], max_entries: usize) -> Result<Vec<Vec<u8>>> {
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let entries = (&mut json)
        .deserialize_seq(Entries { max_entries })
        .and_then(|entries| json.end().map(|()| entries))
        .context("expected a JSON array of base64 strings")?;
    entries
        .iter()
        .enumerate()
        .map(|(i, s)| {
            base64::engine::general_purpose::STANDARD
                .decode(s.trim())
                .with_context(|| format!("entry {i} is not valid base64"))
        })
        .collect()
}

/// Reads the array, counting: entries up to the bound are kept as (borrowed) text.
struct Entries {
    max_entries: usize,
}

impl<'de> Visitor<'de> for Entries {
    type Value = Vec<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array of base64 strings")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        loop {
            if out.len() == self.max_entries {
                // One more element, skipped without keeping anything, decides the refusal.
                return match seq.next_element::<IgnoredAny>()? {
                    None => Ok(out),
                    Some(_) => Err(de::Error::custom(format_args!(
                        "the list has more than {} entries, the most this request takes; \
                         refused before decoding any",
                        self.max_entries
                    ))),
                };
            }
            match seq.next_element::<Entry<'de>>()? {
                Some(Entry(s)) => out.push(s),
                None => return Ok(out),
            }
        }
    }
}

/// One entry's text, borrowed from the input where it has no escapes.
struct Entry<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Entry<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(EntryVisitor)
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a base64 string")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Entry(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Entry(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Entry(Cow::Owned(s)))
    }
}
