//! The gRPC codec: prost, after a scan of the raw message that refuses counts no proof type
//! allows before prost allocates for them. A SubmitProof of 128M empty `vanilla_proofs`
//! entries is 256 MB on the wire but 3 GB once decoded (a `Vec<u8>` header per entry); the scan
//! reads field tags and lengths only, allocates nothing, and costs one pass over the bytes.

use std::marker::PhantomData;

use bytes::Buf;
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, ProstCodec};
use tonic::Status;

use zkforge_engine::FailureKind;

use crate::{pb, request, status};

/// Field numbers of the messages the scan looks into.
const SUBMIT_PROOF_KIND: u64 = 2;
const SUBMIT_PRIORITY: u64 = 5;
const SUBMIT_VANILLA_PROOFS: u64 = 11;
const PROVE_SUBMIT: u64 = 1;

/// The first bytes of a SubmitProof or Prove message that [`urgent_head`] reads: encoders
/// write fields in number order (prost and Go's protobuf both do), so the kind (2) and the
/// priority (5) follow at most a 256-byte request id (1) and two integers.
pub const HEAD_BYTES: usize = 512;

/// Whether a SubmitProofRequest (`prove`: a ProveRequest) whose first bytes are `head` asks
/// for urgent work, read before the rest of the message has arrived: its kind and priority
/// are read by the functions the service reads them with for the queues
/// ([`request::kind_and_priority`]) and asked [`Priority::is_urgent`](zkforge_engine::Priority),
/// so the receive reserve and the queues never disagree. A head that does not say (fields in
/// another order, a truncated or malformed one, a kind or priority the service refuses) is
/// bulk work: the reserve it is refused is for requests that say who they are.
pub fn urgent_head(head: &[u8], prove: bool) -> bool {
    let submit = if prove {
        match fields(head).find(|(n, _)| *n == PROVE_SUBMIT) {
            Some((_, Field::Bytes(b))) => b,
            // A submit message cut by the head's end: its start is all there is.
            _ => match partial_bytes_field(head, PROVE_SUBMIT) {
                Some(b) => b,
                None => return false,
            },
        }
    } else {
        head
    };
    // Unset fields are absent on the wire and read as proto3's 0, as prost reads them.
    let (mut kind, mut priority) = (0, 0);
    for (n, f) in fields(submit) {
        match (n, f) {
            // An int32 enum travels as the sign-extended varint; its low 32 bits are the value.
            (SUBMIT_PROOF_KIND, Field::Varint(v)) => kind = v as i32,
            (SUBMIT_PRIORITY, Field::Varint(v)) => priority = v as i32,
            _ => {}
        }
    }
    request::kind_and_priority(kind, priority).is_ok_and(|(_, p)| p.is_urgent())
}

/// The bytes present of length-delimited field `number` at the start of `b` when the field
/// runs past the end of `b`.
fn partial_bytes_field(mut b: &[u8], number: u64) -> Option<&[u8]> {
    let tag = varint(&mut b)?;
    (tag >> 3 == number && tag & 7 == 2).then_some(())?;
    varint(&mut b)?;
    Some(b)
}

/// Most `vanilla_proofs` entries any request may carry: a full WindowPoSt partition (2,349
/// sectors at 32 GiB). Each proof kind's own bound is checked before decoding the entries.
pub fn max_vanilla_entries() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        use zkforge_filecoin::ProofKind::{SnapDeals, WindowPost, WinningPost};
        const SECTOR_SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];
        SECTOR_SIZES
            .iter()
            .flat_map(|&size| [WinningPost, WindowPost, SnapDeals].map(|k| (k, size)))
            .filter_map(|(kind, size)| zkforge_filecoin::max_vanilla_proofs(kind, size).ok())
            .max()
            .unwrap_or(1)
    })
}

/// A check of a message's raw bytes before decoding; most messages need none.
pub trait Prescan {
    fn prescan(_bytes: &[u8]) -> Result<(), Status> {
        Ok(())
    }
}

impl Prescan for pb::SubmitProofRequest {
    fn prescan(bytes: &[u8]) -> Result<(), Status> {
        let count = count_field(bytes, SUBMIT_VANILLA_PROOFS);
        let max = max_vanilla_entries();
        if count > max {
            return Err(status::failure(
                FailureKind::InvalidInput,
                format!(
                    "vanilla_proofs has {count} entries; a request carries at most {max} (a \
                     full WindowPoSt partition)"
                ),
            ));
        }
        Ok(())
    }
}

impl Prescan for pb::ProveRequest {
    fn prescan(bytes: &[u8]) -> Result<(), Status> {
        for submit in fields(bytes).filter_map(|(n, f)| (n == PROVE_SUBMIT).then_some(f)) {
            if let Field::Bytes(b) = submit {
                pb::SubmitProofRequest::prescan(b)?;
            }
        }
        Ok(())
    }
}

macro_rules! no_prescan {
    ($($t:ty),* $(,)?) => { $(impl Prescan for $t {})* };
}

no_prescan!(
    pb::SubmitProofResponse,
    pb::AwaitProofRequest,
    pb::AwaitProofResponse,
    pb::ProveResponse,
    pb::CancelProofRequest,
    pb::CancelProofResponse,
    pb::GetStatusRequest,
    pb::GetStatusResponse,
    pb::GetMetricsRequest,
    pb::GetMetricsResponse,
    pb::PreloadSrsRequest,
    pb::PreloadSrsResponse,
    pb::EvictSrsRequest,
    pb::EvictSrsResponse,
);

/// prost's codec with [`Prescan`] before each decode. Used for the ProvingEngine service (and
/// its client) through tonic-build's `codec_path`.
#[derive(Debug, Clone)]
pub struct ScannedCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for ScannedCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for ScannedCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Prescan + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = <ProstCodec<T, U> as Codec>::Encoder;
    type Decoder = ScannedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::default().encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        ScannedDecoder(ProstCodec::<T, U>::default().decoder())
    }
}

pub struct ScannedDecoder<U>(<ProstCodec<(), U> as Codec>::Decoder)
where
    U: Message + Default + Send + 'static;

impl<U> Decoder for ScannedDecoder<U>
where
    U: Message + Default + Prescan + Send + 'static,
{
    type Item = U;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        // tonic hands over the whole message in one contiguous buffer.
        U::prescan(src.chunk())?;
        self.0.decode(src).map_err(|e| {
            let message_type = std::any::type_name::<U>().rsplit("::").next();
            status::undecodable(e, message_type.unwrap_or("message"))
        })
    }
}

/// One field of a protobuf message: what the scans need of it.
enum Field<'a> {
    Bytes(&'a [u8]),
    Varint(u64),
    Other,
}

/// The (field number, value) pairs of a message, stopping at the first malformed byte (prost
/// then reports it properly).
fn fields(mut b: &[u8]) -> impl Iterator<Item = (u64, Field<'_>)> {
    std::iter::from_fn(move || {
        let tag = varint(&mut b)?;
        let field = match tag & 7 {
            0 => Field::Varint(varint(&mut b)?),
            1 => skip(&mut b, 8)?,
            2 => {
                let len = usize::try_from(varint(&mut b)?).ok()?;
                let (value, rest) = (b.get(..len)?, b.get(len..)?);
                b = rest;
                Field::Bytes(value)
            }
            5 => skip(&mut b, 4)?,
            _ => return None,
        };
        Some((tag >> 3, field))
    })
}

fn count_field(bytes: &[u8], number: u64) -> usize {
    fields(bytes).filter(|(n, _)| *n == number).count()
}

fn varint(b: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn skip<'a>(b: &mut &'a [u8], n: usize) -> Option<Field<'a>> {
    *b = b.get(n..)?;
    Some(Field::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_repeated_entries_without_decoding() {
        let r = pb::SubmitProofRequest {
            request_id: "x".into(),
            sector_size: 2048,
            vanilla_proofs: vec![vec![]; 5],
            vanilla_proof: vec![7; 300],
            ..Default::default()
        };
        let bytes = r.encode_to_vec();
        assert_eq!(count_field(&bytes, SUBMIT_VANILLA_PROOFS), 5);
        assert!(pb::SubmitProofRequest::prescan(&bytes).is_ok());
        let over = pb::SubmitProofRequest {
            vanilla_proofs: vec![vec![]; max_vanilla_entries() + 1],
            ..Default::default()
        };
        let err = pb::SubmitProofRequest::prescan(&over.encode_to_vec()).unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(
            err.message().contains("vanilla_proofs has"),
            "{}",
            err.message()
        );
        let prove = pb::ProveRequest { submit: Some(over) };
        assert!(pb::ProveRequest::prescan(&prove.encode_to_vec()).is_err());
        // Malformed bytes are left to prost.
        assert!(pb::SubmitProofRequest::prescan(&[0x5a, 0xff, 0xff]).is_ok());
    }
}
