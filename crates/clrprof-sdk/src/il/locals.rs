//! Local variable signatures (ECMA-335 II.23.2.6): adding a local.

use super::IlError;
use crate::metadata::signature::read_compressed;

const LOCAL_SIG: u8 = 0x07;

fn bad(what: &'static str) -> IlError {
    IlError::InvalidCode { offset: 0, what }
}

/// Writes a compressed unsigned integer (at most `0x1FFF_FFFF`).
pub(crate) fn write_compressed(v: u32, out: &mut Vec<u8>) {
    if v < 0x80 {
        out.push(v as u8);
    } else if v < 0x4000 {
        out.extend_from_slice(&((v as u16) | 0x8000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xC000_0000).to_be_bytes());
    }
}

/// Appends a local of type `local_type` (an encoded type, e.g. `[0x0A]` for `int64`) to the
/// local variable signature `sig` (empty for a method without locals). Returns the new
/// signature, to turn into a StandAloneSig token (`IMetaDataEmit::GetTokenFromSig`), and the
/// index of the new local.
pub fn append_local(sig: &[u8], local_type: &[u8]) -> Result<(Vec<u8>, u16), IlError> {
    let (count, rest) = if sig.is_empty() {
        (0, &[][..])
    } else {
        if sig[0] != LOCAL_SIG {
            return Err(bad("not a local variable signature"));
        }
        let (count, len) = read_compressed(&sig[1..]).ok_or(bad("bad local variable count"))?;
        (count, &sig[1 + len..])
    };
    let index = u16::try_from(count)
        .ok()
        .filter(|&i| i < u16::MAX)
        .ok_or(bad("too many locals"))?;
    let mut out = vec![LOCAL_SIG];
    write_compressed(count + 1, &mut out);
    out.extend_from_slice(rest);
    out.extend_from_slice(local_type);
    Ok((out, index))
}
