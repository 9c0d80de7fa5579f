//! Request-body plumbing shared by every protocol: the media type of
//! `Content-Type`, `Content-Encoding` decompression and snappy block
//! decompression, all bounded by the body-size limit.

use crate::limits::exceeds;
use crate::PushError;
use std::borrow::Cow;
use std::io::Read;

/// The media type of a `Content-Type` header, lowercased, without parameters
/// (`application/json; charset=utf-8` -> `application/json`). A missing or
/// empty header is an error, as Go's `mime.ParseMediaType` (which Loki uses) makes it.
pub fn media_type(content_type: Option<&str>) -> Result<String, PushError> {
    let raw = content_type.unwrap_or("");
    let main = raw.split(';').next().unwrap_or("").trim();
    if main.is_empty() {
        return Err(PushError::ContentType("mime: no media type".into()));
    }
    let Some((ty, sub)) = main.split_once('/') else {
        return Err(PushError::ContentType(
            "mime: expected slash after first token".into(),
        ));
    };
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?=".contains(&b))
    };
    if !token(ty) || !token(sub) {
        return Err(PushError::ContentType(
            "mime: expected token after slash".into(),
        ));
    }
    Ok(main.to_ascii_lowercase())
}

/// A `Content-Encoding` the decoders understand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// No header (or `snappy`, which for Loki only restates the protobuf framing).
    Identity,
    /// `gzip`.
    Gzip,
    /// `deflate`: raw DEFLATE as Go's `compress/flate` reads it, or zlib-wrapped as HTTP defines it.
    Deflate,
}

impl Encoding {
    /// Parses a `Content-Encoding` header the way Loki's push handler does:
    /// empty, `snappy`, `gzip` and `deflate` are accepted, anything else is a 400.
    pub fn parse(header: Option<&str>) -> Result<Encoding, PushError> {
        let h = header.unwrap_or("").trim();
        match h.to_ascii_lowercase().as_str() {
            "" | "snappy" => Ok(Encoding::Identity),
            "gzip" | "x-gzip" => Ok(Encoding::Gzip),
            "deflate" => Ok(Encoding::Deflate),
            _ => Err(PushError::UnsupportedEncoding(h.to_string())),
        }
    }
}

/// Undoes `encoding` on `body`, refusing output larger than `limit` bytes
/// (`0` = no limit). Identity borrows the body.
pub fn decompress(
    body: &[u8],
    encoding: Encoding,
    limit: usize,
) -> Result<Cow<'_, [u8]>, PushError> {
    match encoding {
        Encoding::Identity => {
            if exceeds(body.len(), limit) {
                return Err(PushError::BodyTooLarge {
                    size: body.len(),
                    limit,
                });
            }
            Ok(Cow::Borrowed(body))
        }
        Encoding::Gzip => read_bounded(
            flate2::read::MultiGzDecoder::new(body),
            body.len(),
            limit,
            "gzip",
        ),
        Encoding::Deflate => {
            let zlib = body.len() >= 2
                && body[0] & 0x0f == 8
                && (u16::from(body[0]) << 8 | u16::from(body[1])) % 31 == 0;
            if zlib {
                read_bounded(
                    flate2::read::ZlibDecoder::new(body),
                    body.len(),
                    limit,
                    "zlib",
                )
            } else {
                read_bounded(
                    flate2::read::DeflateDecoder::new(body),
                    body.len(),
                    limit,
                    "flate",
                )
            }
        }
    }
}

fn read_bounded<R: Read>(
    reader: R,
    hint: usize,
    limit: usize,
    what: &str,
) -> Result<Cow<'static, [u8]>, PushError> {
    let cap = if limit == 0 {
        u64::MAX
    } else {
        limit as u64 + 1
    };
    let mut out =
        Vec::with_capacity(
            hint.saturating_mul(4)
                .min(if limit == 0 { usize::MAX } else { limit }),
        );
    reader
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|e| PushError::Decompress(format!("{what}: {e}")))?;
    if exceeds(out.len(), limit) {
        return Err(PushError::BodyTooLarge {
            size: out.len(),
            limit,
        });
    }
    Ok(Cow::Owned(out))
}

/// Decompresses a snappy *block* (no framing), as Promtail and Alloy send
/// Loki pushes. The length the block claims is checked against `limit`
/// before anything is allocated.
pub fn snappy_block(body: &[u8], limit: usize) -> Result<Vec<u8>, PushError> {
    let len = snappy_len(body, limit)?;
    let mut out = vec![0u8; len];
    let n = snap::raw::Decoder::new()
        .decompress(body, &mut out)
        .map_err(|e| PushError::Decompress(e.to_string()))?;
    out.truncate(n);
    Ok(out)
}

/// The most a snappy block can expand: a 3-byte copy element yields at most
/// 64 bytes. A header claiming more is corrupt, and is refused before any
/// buffer is allocated.
const SNAPPY_MAX_RATIO: usize = 22;

/// The decompressed length a snappy block claims, checked against `limit`
/// and against what its size can possibly hold.
fn snappy_len(body: &[u8], limit: usize) -> Result<usize, PushError> {
    let len = snap::raw::decompress_len(body).map_err(|e| PushError::Decompress(e.to_string()))?;
    if exceeds(len, limit) {
        return Err(PushError::BodyTooLarge { size: len, limit });
    }
    if len > body.len().saturating_mul(SNAPPY_MAX_RATIO) {
        return Err(PushError::Decompress(format!(
            "snappy: corrupt input (claims {len} bytes from {} compressed bytes)",
            body.len()
        )));
    }
    Ok(len)
}

/// Like [`snappy_block`], but decompresses into `scratch` (grown as needed,
/// never shrunk, so a reused buffer costs no allocation or zeroing) and
/// returns the decompressed length.
pub fn snappy_block_into(
    body: &[u8],
    limit: usize,
    scratch: &mut Vec<u8>,
) -> Result<usize, PushError> {
    let len = snappy_len(body, limit)?;
    if scratch.len() < len {
        scratch.resize(len, 0);
    }
    snap::raw::Decoder::new()
        .decompress(body, &mut scratch[..len])
        .map_err(|e| PushError::Decompress(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn media_types() {
        assert_eq!(
            media_type(Some("Application/JSON; charset=utf-8")).unwrap(),
            "application/json"
        );
        assert_eq!(
            media_type(Some("application/x-protobuf")).unwrap(),
            "application/x-protobuf"
        );
        assert_eq!(
            media_type(None).unwrap_err().to_string(),
            "mime: no media type"
        );
        assert!(media_type(Some("json")).is_err());
        assert!(media_type(Some("a/")).is_err());
    }

    #[test]
    fn encodings() {
        assert_eq!(Encoding::parse(None).unwrap(), Encoding::Identity);
        assert_eq!(Encoding::parse(Some("snappy")).unwrap(), Encoding::Identity);
        assert_eq!(Encoding::parse(Some("gzip")).unwrap(), Encoding::Gzip);
        let e = Encoding::parse(Some("br")).unwrap_err();
        assert_eq!(
            (e.status(), e.to_string()),
            (400, r#"Content-Encoding "br" not supported"#.to_string())
        );
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        w.write_all(data).unwrap();
        w.finish().unwrap()
    }

    #[test]
    fn gzip_and_deflate_round_trip() {
        let data = b"hello hello hello".repeat(100);
        assert_eq!(
            &*decompress(&gzip(&data), Encoding::Gzip, 0).unwrap(),
            &data[..]
        );
        let mut w = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        w.write_all(&data).unwrap();
        assert_eq!(
            &*decompress(&w.finish().unwrap(), Encoding::Deflate, 0).unwrap(),
            &data[..]
        );
        let mut w = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        w.write_all(&data).unwrap();
        assert_eq!(
            &*decompress(&w.finish().unwrap(), Encoding::Deflate, 0).unwrap(),
            &data[..]
        );
    }

    #[test]
    fn bombs_stop_at_the_limit() {
        let bomb = gzip(&vec![0u8; 10 << 20]);
        assert!(bomb.len() < 100 << 10);
        let e = decompress(&bomb, Encoding::Gzip, 1 << 20).unwrap_err();
        assert_eq!(e.status(), 413);
        let snappy = snap::raw::Encoder::new()
            .compress_vec(&vec![0u8; 10 << 20])
            .unwrap();
        assert_eq!(snappy_block(&snappy, 1 << 20).unwrap_err().status(), 413);
        assert_eq!(snappy_block(&snappy, 0).unwrap().len(), 10 << 20);
        let mut scratch = vec![1u8; 20 << 20];
        assert_eq!(
            snappy_block_into(&snappy, 0, &mut scratch).unwrap(),
            10 << 20
        );
        assert!(scratch[..10 << 20].iter().all(|b| *b == 0));
    }

    #[test]
    fn corrupt_input_is_an_error() {
        assert_eq!(
            decompress(b"not gzip", Encoding::Gzip, 0)
                .unwrap_err()
                .status(),
            400
        );
        assert_eq!(
            snappy_block(b"\xff\xff\xff\xff\xff\xff", 0)
                .unwrap_err()
                .status(),
            400
        );
        assert!(decompress(b"abc", Encoding::Identity, 2).is_err());
        // A 5-byte body claiming 50 MB is refused without allocating it.
        let e = snappy_block(b"\x80\xe1\xeb\x17\x00", 0).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("snappy: corrupt input (claims 50000000 bytes"),
            "{e}"
        );
    }
}
