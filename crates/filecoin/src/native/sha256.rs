//! SHA-256 computed natively, writing every variable bellperson 0.27's `sha256` gadget would
//! allocate, in its order, with its value.
//!
//! The gadget works on `Boolean`s, each a constant, an allocated bit, or a negated allocated
//! bit, and what it allocates depends on which of these its operands are (a XOR with a
//! constant allocates nothing; a sum of constants stays a constant). That case analysis is
//! mirrored here 32 bits at a time: a [`Word`] carries, per bit, its boolean value, whether it
//! is a constant and whether it is a negated view of its variable. Which bits are constant is
//! fixed by the circuit's shape (padding, IV, round constants, the layer index), never by the
//! data, so the allocation count is too.
//!
//! What the gadget allocates, per operation, bit `i` ascending within each:
//! - `xor` (`UInt32::xor` / `Boolean::xor`): one bit when both operands are variables; its
//!   value is the XOR of the two underlying variables.
//! - `and` (`Boolean::and`, inside ch/maj): one bit when both are variables; value a AND b.
//! - `ch` / `maj` (`Boolean::sha256_ch` / `sha256_maj`): one bit (maj: two, maj then b AND c)
//!   when no operand is constant; otherwise they reduce to `and`s by the gadget's match arms.
//! - `addmany`: nothing when every operand bit is constant, otherwise the bits of the full
//!   (uncarried) sum, as many as `n * (2^32 - 1)` needs.
//!
//! MultiEq only merges the addmany equality constraints; it allocates nothing.

use blstrs::Scalar;
use zkforge_groth16::AssignmentWriter;

use bellpepper_core::SynthesisError;

type Res<T> = Result<T, SynthesisError>;

/// 32 gadget `Boolean`s, bit 0 least significant (`UInt32`'s order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    /// The boolean value of each bit.
    pub val: u32,
    /// Bits that are constants rather than views of a variable.
    pub konst: u32,
    /// Variable bits that are negated views (`Boolean::Not`); zero on constant bits.
    pub neg: u32,
}

impl Word {
    pub const fn constant(val: u32) -> Self {
        Self {
            val,
            konst: !0,
            neg: 0,
        }
    }

    /// 32 freshly allocated bits (`Boolean::Is`).
    pub const fn allocated(val: u32) -> Self {
        Self {
            val,
            konst: 0,
            neg: 0,
        }
    }

    /// The values of the underlying variables (meaningful on non-constant bits).
    fn vars(self) -> u32 {
        self.val ^ self.neg
    }

    fn rotr(self, by: u32) -> Self {
        Self {
            val: self.val.rotate_right(by),
            konst: self.konst.rotate_right(by),
            neg: self.neg.rotate_right(by),
        }
    }

    fn shr(self, by: u32) -> Self {
        Self {
            val: self.val >> by,
            konst: (self.konst >> by) | !(u32::MAX >> by),
            neg: self.neg >> by,
        }
    }

    fn not(self) -> Self {
        Self {
            val: !self.val,
            konst: self.konst,
            neg: !self.neg & !self.konst,
        }
    }

    /// Bit `i` alone, the other 31 bits constant false (which allocate nothing in any
    /// operation, so per-bit emulation can reuse the word operations).
    fn bit(self, i: u32) -> Self {
        Self {
            val: (self.val >> i) & 1,
            konst: ((self.konst >> i) & 1) | !1,
            neg: (self.neg >> i) & 1,
        }
    }

    /// Puts bit 0 of `b` at position `i` of `self`.
    fn set_bit(&mut self, i: u32, b: Self) {
        let m = 1 << i;
        self.val = (self.val & !m) | ((b.val & 1) << i);
        self.konst = (self.konst & !m) | ((b.konst & 1) << i);
        self.neg = (self.neg & !m) | ((b.neg & 1) << i);
    }
}

/// `Boolean::xor` on each bit.
fn xor(w: &mut AssignmentWriter<'_>, a: Word, b: Word) -> Res<Word> {
    let alloc = !a.konst & !b.konst;
    w.push_bits(u64::from(a.vars() ^ b.vars()), u64::from(alloc))?;
    let konst = a.konst & b.konst;
    // Variable ⊕ variable: a fresh bit, negated iff exactly one operand was; variable ⊕
    // constant: the variable, negated once more by a constant true.
    let neg = (a.neg ^ b.neg ^ (a.konst & a.val) ^ (b.konst & b.val)) & !konst;
    Ok(Word {
        val: a.val ^ b.val,
        konst,
        neg,
    })
}

/// `Boolean::and` on each bit.
fn and(w: &mut AssignmentWriter<'_>, a: Word, b: Word) -> Res<Word> {
    let alloc = !a.konst & !b.konst;
    w.push_bits(u64::from(a.val & b.val), u64::from(alloc))?;
    let falses = (a.konst & !a.val) | (b.konst & !b.val);
    let konst = falses | (a.konst & b.konst);
    // A constant true passes the other operand through, negation included.
    let passed = !konst & !alloc;
    let neg = passed & ((a.konst & b.neg) | (b.konst & a.neg));
    Ok(Word {
        val: a.val & b.val,
        konst,
        neg,
    })
}

fn is_false(x: Word) -> bool {
    x.konst & 1 == 1 && x.val & 1 == 0
}

fn is_true(x: Word) -> bool {
    x.konst & 1 == 1 && x.val & 1 == 1
}

/// `Boolean::sha256_ch` on bit 0 of single-bit words, following the gadget's match arms.
fn ch_bit(w: &mut AssignmentWriter<'_>, a: Word, b: Word, c: Word) -> Res<Word> {
    let value = (a.val & b.val) ^ (!a.val & c.val);
    if a.konst & b.konst & c.konst & 1 == 1 {
        return Ok(Word::constant(value & 1).bit(0));
    }
    if is_false(a) {
        return Ok(c);
    }
    if is_false(b) {
        return and(w, a.not().bit(0), c);
    }
    if is_false(c) {
        return and(w, a, b);
    }
    if is_true(c) {
        return Ok(and(w, a, b.not().bit(0))?.not().bit(0));
    }
    if is_true(b) {
        return Ok(and(w, a.not().bit(0), c.not().bit(0))?.not().bit(0));
    }
    w.push_bit(value & 1 == 1)?;
    Ok(Word::allocated(value & 1).bit(0))
}

/// `Boolean::sha256_maj` on bit 0 of single-bit words, following the gadget's match arms.
fn maj_bit(w: &mut AssignmentWriter<'_>, a: Word, b: Word, c: Word) -> Res<Word> {
    let value = (a.val & b.val) ^ (a.val & c.val) ^ (b.val & c.val);
    if a.konst & b.konst & c.konst & 1 == 1 {
        return Ok(Word::constant(value & 1).bit(0));
    }
    if is_false(a) {
        return and(w, b, c);
    }
    if is_false(b) {
        return and(w, a, c);
    }
    if is_false(c) {
        return and(w, a, b);
    }
    if is_true(c) {
        return Ok(and(w, a.not().bit(0), b.not().bit(0))?.not().bit(0));
    }
    if is_true(b) {
        return Ok(and(w, a.not().bit(0), c.not().bit(0))?.not().bit(0));
    }
    if is_true(a) {
        return Ok(and(w, b.not().bit(0), c.not().bit(0))?.not().bit(0));
    }
    w.push_bit(value & 1 == 1)?;
    w.push_bit(b.val & c.val & 1 == 1)?;
    Ok(Word::allocated(value & 1).bit(0))
}

type BitOp = fn(&mut AssignmentWriter<'_>, Word, Word, Word) -> Res<Word>;

/// A three-operand bit function over a word, bit by bit (for words with constant bits).
fn per_bit(w: &mut AssignmentWriter<'_>, op: BitOp, a: Word, b: Word, c: Word) -> Res<Word> {
    let mut out = Word::constant(0);
    for i in 0..32 {
        let r = op(w, a.bit(i), b.bit(i), c.bit(i))?;
        out.set_bit(i, r);
    }
    Ok(out)
}

/// `UInt32::sha256_ch`.
fn ch(w: &mut AssignmentWriter<'_>, a: Word, b: Word, c: Word) -> Res<Word> {
    if a.konst | b.konst | c.konst == 0 {
        let value = (a.val & b.val) ^ (!a.val & c.val);
        w.push_bits(u64::from(value), u64::from(u32::MAX))?;
        return Ok(Word::allocated(value));
    }
    per_bit(w, ch_bit, a, b, c)
}

/// `UInt32::sha256_maj`.
fn maj(w: &mut AssignmentWriter<'_>, a: Word, b: Word, c: Word) -> Res<Word> {
    if a.konst | b.konst | c.konst == 0 {
        let value = (a.val & b.val) ^ (a.val & c.val) ^ (b.val & c.val);
        w.push_bit_pairs(value, b.val & c.val)?;
        return Ok(Word::allocated(value));
    }
    per_bit(w, maj_bit, a, b, c)
}

/// `UInt32::addmany`.
fn addmany(w: &mut AssignmentWriter<'_>, operands: &[Word]) -> Res<Word> {
    let sum: u64 = operands.iter().map(|x| u64::from(x.val)).sum();
    if operands.iter().all(|x| x.konst == u32::MAX) {
        return Ok(Word::constant(sum as u32));
    }
    let max = operands.len() as u64 * u64::from(u32::MAX);
    let bits = 64 - max.leading_zeros();
    w.push_bits(sum, (1u64 << bits) - 1)?;
    Ok(Word::allocated(sum as u32))
}

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A working variable of the compression: a word, or a sum whose `addmany` is deferred to
/// where it is first read (the gadget's `Maybe`), which saves allocations.
#[derive(Clone, Copy)]
enum Maybe {
    Concrete(Word),
    Deferred([Word; 8], usize),
}

impl Maybe {
    /// The sum of `temp1` (h + Σ1 + ch + k + w, shared by the new a and e) and `rest`, left
    /// for [`compute`](Self::compute).
    fn deferred(temp1: &[Word; 5], rest: &[Word]) -> Self {
        let mut v = [Word::constant(0); 8];
        v[..5].copy_from_slice(temp1);
        v[5..5 + rest.len()].copy_from_slice(rest);
        Maybe::Deferred(v, 5 + rest.len())
    }

    fn compute(self, w: &mut AssignmentWriter<'_>, extra: Option<Word>) -> Res<Word> {
        match self {
            Maybe::Concrete(x) => Ok(x),
            Maybe::Deferred(mut v, mut n) => {
                if let Some(e) = extra {
                    v[n] = e;
                    n += 1;
                }
                addmany(w, &v[..n])
            }
        }
    }
}

/// `sha256_compression_function`: one 512-bit block into the running state.
fn compress(w: &mut AssignmentWriter<'_>, block: &[Word], state: &[Word; 8]) -> Res<[Word; 8]> {
    debug_assert_eq!(block.len(), 16);
    let mut ws = [Word::constant(0); 64];
    ws[..16].copy_from_slice(block);
    for i in 16..64 {
        let x = ws[i - 15];
        let s0 = xor(w, x.rotr(7), x.rotr(18))?;
        let s0 = xor(w, s0, x.shr(3))?;
        let y = ws[i - 2];
        let s1 = xor(w, y.rotr(17), y.rotr(19))?;
        let s1 = xor(w, s1, y.shr(10))?;
        ws[i] = addmany(w, &[ws[i - 16], s0, ws[i - 7], s1])?;
    }

    let mut a = Maybe::Concrete(state[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *state;
    let mut e = Maybe::Concrete(state[4]);
    for i in 0..64 {
        let new_e = e.compute(w, None)?;
        let s1 = xor(w, new_e.rotr(6), new_e.rotr(11))?;
        let s1 = xor(w, s1, new_e.rotr(25))?;
        let ch = ch(w, new_e, f, g)?;
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), ws[i]];

        let new_a = a.compute(w, None)?;
        let s0 = xor(w, new_a.rotr(2), new_a.rotr(13))?;
        let s0 = xor(w, s0, new_a.rotr(22))?;
        let maj = maj(w, new_a, b, c)?;

        h = g;
        g = f;
        f = new_e;
        e = Maybe::deferred(&temp1, &[d]);
        d = c;
        c = b;
        b = new_a;
        a = Maybe::deferred(&temp1, &[s0, maj]);
    }

    Ok([
        a.compute(w, Some(state[0]))?,
        addmany(w, &[state[1], b])?,
        addmany(w, &[state[2], c])?,
        addmany(w, &[state[3], d])?,
        e.compute(w, Some(state[4]))?,
        addmany(w, &[state[5], f])?,
        addmany(w, &[state[6], g])?,
        addmany(w, &[state[7], h])?,
    ])
}

/// bellperson's `sha256` gadget over a message of whole 32-bit words (big-endian bit order
/// within each word, as `UInt32::from_bits_be` reads them): padding, then one compression per
/// block. Returns the digest words.
pub fn sha256(w: &mut AssignmentWriter<'_>, message: &[Word]) -> Res<[Word; 8]> {
    let bit_len = message.len() as u64 * 32;
    let padded_words = (message.len() + 1 + 2).div_ceil(16) * 16;
    let mut state = IV.map(Word::constant);
    let word_at = |i: usize| -> Word {
        if i < message.len() {
            message[i]
        } else if i == message.len() {
            Word::constant(0x8000_0000)
        } else if i == padded_words - 2 {
            Word::constant((bit_len >> 32) as u32)
        } else if i == padded_words - 1 {
            Word::constant(bit_len as u32)
        } else {
            Word::constant(0)
        }
    };
    let mut block = [Word::constant(0); 16];
    for start in (0..padded_words).step_by(16) {
        for (j, slot) in block.iter_mut().enumerate() {
            *slot = word_at(start + j);
        }
        state = compress(w, &block, &state)?;
    }
    Ok(state)
}

/// The field element the PoRep circuits pack a digest into (`multipack::pack_bits` of the
/// first 254 bits after reversing the bit order within each byte): the digest bytes read
/// little-endian, truncated to 254 bits.
pub fn digest_to_scalar(digest: &[Word; 8]) -> Scalar {
    let mut bytes = [0u8; 32];
    for (chunk, word) in bytes.chunks_exact_mut(4).zip(digest) {
        chunk.copy_from_slice(&word.val.to_be_bytes());
    }
    bytes[31] &= 0x3f;
    Option::from(Scalar::from_bytes_le(&bytes)).expect("254 bits are below the modulus")
}

/// The 8 message words of a field element as the circuits feed it to SHA-256: its 255 bits
/// from `to_bits_le` (freshly allocated) padded with a constant false, in little-endian byte
/// order with each byte most significant bit first (`reverse_bit_numbering`).
pub fn scalar_words(value: &Scalar) -> [Word; 8] {
    let bytes = value.to_bytes_le();
    let mut words = [Word::allocated(0); 8];
    for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        word.val = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    // Bit 255 is the padding constant: the top bit of byte 31, the low byte of word 7.
    words[7].konst = 0x80;
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::boolean::{AllocatedBit, Boolean};
    use bellpepper_core::ConstraintSystem;
    use bellperson::gadgets::sha256::sha256 as sha256_gadget;
    use rand_core::{RngCore, SeedableRng};

    use crate::native::test_support::allocate_alike;

    /// A message of `words` words where bit kinds (constant / allocated / negated) are mixed,
    /// as `Boolean`s for the gadget and as `Word`s for us.
    fn message(rng: &mut impl RngCore, words: usize, kinds: u32) -> (Vec<Word>, Vec<(u8, bool)>) {
        let mut ours = Vec::new();
        let mut bits = Vec::new();
        for _ in 0..words {
            let mut word = Word::allocated(rng.next_u32());
            if kinds > 0 {
                word.konst = rng.next_u32() & rng.next_u32();
                if kinds > 1 {
                    word.neg = rng.next_u32() & !word.konst;
                }
            }
            for i in (0..32).rev() {
                let (v, k, n) = (
                    (word.val >> i) & 1,
                    (word.konst >> i) & 1,
                    (word.neg >> i) & 1,
                );
                let kind = if k == 1 {
                    0
                } else if n == 1 {
                    2
                } else {
                    1
                };
                bits.push((kind, v == 1));
            }
            ours.push(word);
        }
        (ours, bits)
    }

    /// The gadget and the native code allocate the same values in the same order.
    fn check(words: usize, kinds: u32, seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (ours, bits) = message(&mut rng, words, kinds);

        let (digest_bits, digest, _) = allocate_alike(
            (0, 1 << 20),
            |cs| {
                let mut input = Vec::new();
                for (i, &(kind, v)) in bits.iter().enumerate() {
                    input.push(match kind {
                        0 => Boolean::constant(v),
                        1 => Boolean::from(AllocatedBit::alloc(
                            cs.namespace(|| i.to_string()),
                            Some(v),
                        )?),
                        _ => Boolean::from(AllocatedBit::alloc(
                            cs.namespace(|| i.to_string()),
                            Some(!v),
                        )?)
                        .not(),
                    });
                }
                Ok(sha256_gadget(cs.namespace(|| "sha"), &input)?
                    .iter()
                    .map(|b| b.get_value().unwrap())
                    .collect::<Vec<bool>>())
            },
            |w| {
                // The message's own variables, as the reference allocated them.
                for &(kind, v) in &bits {
                    if kind != 0 {
                        w.push_bit(if kind == 1 { v } else { !v })?;
                    }
                }
                Ok(sha256(w, &ours)?)
            },
        );
        let ours_bits: Vec<bool> = digest
            .iter()
            .flat_map(|w| (0..32).rev().map(move |i| (w.val >> i) & 1 == 1))
            .collect();
        assert_eq!(ours_bits, digest_bits);
    }

    #[test]
    fn allocations_equal_the_gadget_for_allocated_constant_and_negated_bits() {
        for (seed, words) in [(1, 16), (2, 8), (3, 24), (4, 40)] {
            check(words, 0, seed);
            check(words, 1, seed);
            check(words, 2, seed);
        }
    }
}
