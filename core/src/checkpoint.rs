//! Reading checkpoints without `std`: a strict safetensors reader ([`File`]) and the model part of
//! an icl checkpoint ([`decode_model`]): metadata `format = "icl-checkpoint"`, `version`,
//! `dtype`, `step`, `config` (TOML) and the model's tensors ([`crate::ModelSpec::tensors`]).
//!
//! The run layer (`icl-core-run`) reads every checkpoint through this module and adds the trainer's
//! state (tensors `train.*`); firmware reads a checkpoint embedded in flash with the same code.
//! Nothing here panics or allocates more than the input's size on bad input: a damaged file is
//! an [`Error::Checkpoint`].
//!
//! safetensors layout: an 8-byte little-endian header length N, a JSON object of N bytes mapping
//! each tensor name to `{"dtype", "shape", "data_offsets": [begin, end]}` (offsets into the data
//! after the header) plus an optional `"__metadata__"` object of strings, then the data. As the
//! reference implementation, the tensors must cover the data exactly, without gaps or overlaps.
use crate::config::{Config, Dtype};
use crate::model::ModelSpec;
use crate::{Error, Result};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The checkpoint format version this build reads (and `icl-core-run` writes).
pub const VERSION: &str = "1";

/// Largest step count a checkpoint may hold: 2^53, the largest count the log (f64 steps) holds
/// exactly, far beyond any run (`train.steps` <= 2^40), and far enough from `u64::MAX` that
/// counting on cannot wrap. A larger `step` is refused rather than read.
pub const MAX_STEP: u64 = 1 << 53;

/// Largest header accepted (the reference implementation's limit).
pub const MAX_HEADER: usize = 100_000_000;

fn bad(m: impl Into<String>) -> Error {
    Error::Checkpoint(m.into())
}

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StDtype {
    F32,
    F64,
    /// Any other safetensors dtype, by name (its size where known, for offset checks).
    Other(&'static str, usize),
}

impl StDtype {
    fn parse(s: &str) -> Result<StDtype> {
        Ok(match s {
            "F32" => StDtype::F32,
            "F64" => StDtype::F64,
            "BOOL" => StDtype::Other("BOOL", 1),
            "U8" => StDtype::Other("U8", 1),
            "I8" => StDtype::Other("I8", 1),
            "F8_E5M2" => StDtype::Other("F8_E5M2", 1),
            "F8_E4M3" => StDtype::Other("F8_E4M3", 1),
            "I16" => StDtype::Other("I16", 2),
            "U16" => StDtype::Other("U16", 2),
            "F16" => StDtype::Other("F16", 2),
            "BF16" => StDtype::Other("BF16", 2),
            "I32" => StDtype::Other("I32", 4),
            "U32" => StDtype::Other("U32", 4),
            "I64" => StDtype::Other("I64", 8),
            "U64" => StDtype::Other("U64", 8),
            other => return Err(bad(format!("unknown tensor dtype {other:?}"))),
        })
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            StDtype::F32 => 4,
            StDtype::F64 => 8,
            StDtype::Other(_, n) => n,
        }
    }
    /// The safetensors name (`F32`, `F64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            StDtype::F32 => "F32",
            StDtype::F64 => "F64",
            StDtype::Other(n, _) => n,
        }
    }
}

/// One tensor of a [`File`]: its name, dtype, shape and little-endian bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor<'a> {
    pub name: String,
    pub dtype: StDtype,
    pub shape: Vec<usize>,
    pub data: &'a [u8],
}

impl Tensor<'_> {
    /// The values as f64 (F32 or F64 storage), checked against `shape` and for finiteness.
    pub fn to_f64(&self, shape: &[usize]) -> Result<Vec<f64>> {
        if self.shape != shape {
            return Err(bad(format!(
                "tensor {} has shape {:?}, expected {shape:?}",
                self.name, self.shape
            )));
        }
        let v: Vec<f64> = match self.dtype {
            StDtype::F32 => self
                .data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
                .collect(),
            StDtype::F64 => self
                .data
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
            other => {
                return Err(bad(format!(
                    "tensor {} has dtype {}; F32 or F64 expected",
                    self.name,
                    other.name()
                )))
            }
        };
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(bad(format!(
                "tensor {} has a non-finite value at {i}",
                self.name
            )));
        }
        Ok(v)
    }
}

/// A safetensors file in memory, parsed and checked (tensors borrow its bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct File<'a> {
    /// Metadata (`__metadata__`), in file order.
    pub metadata: Vec<(String, String)>,
    /// Tensors, in header order.
    pub tensors: Vec<Tensor<'a>>,
}

/// The checked header of a safetensors file: its metadata, its tensors, where the data starts and
/// how many data bytes the tensors cover.
struct Head {
    metadata: Vec<(String, String)>,
    tensors: Vec<(String, Entry)>,
    start: usize,
    data_len: usize,
}

impl<'a> File<'a> {
    /// The header of a safetensors file from its first bytes (at least the 8-byte length and the
    /// header), checked.
    fn parse_head(bytes: &[u8]) -> Result<Head> {
        if bytes.len() < 8 {
            return Err(bad("shorter than the 8-byte header length"));
        }
        let mut n8 = [0u8; 8];
        n8.copy_from_slice(&bytes[..8]);
        let n = u64::from_le_bytes(n8);
        if n > MAX_HEADER as u64 {
            return Err(bad(format!("header of {n} bytes is too large")));
        }
        let n = n as usize;
        let Some(header) = bytes.get(8..8 + n) else {
            return Err(bad(format!(
                "header of {n} bytes, but only {} bytes follow",
                bytes.len() - 8
            )));
        };
        let text = core::str::from_utf8(header).map_err(|_| bad("header is not UTF-8"))?;
        let mut p = json::Parser::new(text);
        let mut metadata = Vec::new();
        let mut tensors = Vec::new();
        let mut seen_meta = false;
        p.object(|p, key| {
            if key == "__metadata__" {
                if seen_meta {
                    return Err(bad("two __metadata__ entries"));
                }
                seen_meta = true;
                if p.null()? {
                    return Ok(());
                }
                return p.object(|p, k| {
                    if metadata.iter().any(|(m, _): &(String, String)| *m == k) {
                        return Err(bad(format!("metadata key {k:?} appears twice")));
                    }
                    let v = p.string()?;
                    metadata.push((k, v));
                    Ok(())
                });
            }
            if tensors.iter().any(|t: &(String, Entry)| t.0 == key) {
                return Err(bad(format!("tensor {key:?} appears twice")));
            }
            let e = Entry::parse(p, &key)?;
            tensors.push((key, e));
            Ok(())
        })?;
        p.end()?;
        // the tensors must cover the data exactly, in some order, without gaps or overlaps
        let mut order: Vec<usize> = (0..tensors.len()).collect();
        order.sort_by_key(|&i| (tensors[i].1.begin, tensors[i].1.end));
        let mut at = 0usize;
        for &i in &order {
            let (name, e) = &tensors[i];
            if e.begin != at || e.end < e.begin {
                return Err(bad(format!(
                    "tensor {name} has data offsets [{}, {}]; the data is not laid out contiguously",
                    e.begin, e.end
                )));
            }
            let numel = e
                .shape
                .iter()
                .try_fold(1usize, |a, &s| a.checked_mul(s))
                .and_then(|x| x.checked_mul(e.dtype.size()));
            if numel != Some(e.end - e.begin) {
                return Err(bad(format!(
                    "tensor {name} of shape {:?} and dtype {} does not fill its {} bytes",
                    e.shape,
                    e.dtype.name(),
                    e.end - e.begin
                )));
            }
            at = e.end;
        }
        Ok(Head {
            metadata,
            tensors,
            start: 8 + n,
            data_len: at,
        })
    }

    /// The length of the whole file (8 + header + data) that the header at the start of `head`
    /// declares: a reader of a stream (a pipe, a device) reads that many bytes and no more.
    /// `head` holds at least the 8-byte header length and the header.
    pub fn declared_len(head: &[u8]) -> Result<u64> {
        let h = Self::parse_head(head)?;
        Ok(h.start as u64 + h.data_len as u64)
    }

    /// Parse and check a whole safetensors file.
    pub fn parse(bytes: &'a [u8]) -> Result<File<'a>> {
        let Head {
            metadata,
            tensors,
            start,
            data_len: at,
        } = Self::parse_head(bytes)?;
        let data = &bytes[start..];
        if at != data.len() {
            return Err(bad(format!(
                "the tensors cover {at} bytes of data, the file has {}",
                data.len()
            )));
        }
        let tensors = tensors
            .into_iter()
            .map(|(name, e)| Tensor {
                name,
                dtype: e.dtype,
                shape: e.shape,
                data: &data[e.begin..e.end],
            })
            .collect();
        Ok(File { metadata, tensors })
    }

    /// A metadata value.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A metadata value, or an error naming the key.
    pub fn meta_required(&self, key: &str) -> Result<&str> {
        self.meta(key)
            .ok_or_else(|| bad(format!("metadata has no {key}")))
    }

    /// A metadata value parsed as a number, or an error naming the key.
    pub fn meta_number<N: core::str::FromStr>(&self, key: &str) -> Result<N> {
        let v = self.meta_required(key)?;
        v.parse()
            .map_err(|_| bad(format!("metadata {key} = {v:?} is not a number")))
    }

    /// A tensor by name.
    pub fn tensor(&self, name: &str) -> Option<&Tensor<'a>> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// A tensor by name, or an error naming it.
    pub fn tensor_required(&self, name: &str) -> Result<&Tensor<'a>> {
        self.tensor(name)
            .ok_or_else(|| bad(format!("tensor {name} missing")))
    }
}

/// A header entry before its data is attached.
struct Entry {
    dtype: StDtype,
    shape: Vec<usize>,
    begin: usize,
    end: usize,
}

impl Entry {
    fn parse(p: &mut json::Parser, name: &str) -> Result<Entry> {
        let (mut dtype, mut shape, mut offsets) = (None, None, None);
        p.object(|p, k| {
            match k.as_str() {
                "dtype" if dtype.is_none() => dtype = Some(StDtype::parse(&p.string()?)?),
                "shape" if shape.is_none() => shape = Some(p.numbers()?),
                "data_offsets" if offsets.is_none() => offsets = Some(p.numbers()?),
                other => return Err(bad(format!("tensor {name}: unexpected field {other:?}"))),
            }
            Ok(())
        })?;
        let (Some(dtype), Some(shape), Some(offsets)) = (dtype, shape, offsets) else {
            return Err(bad(format!(
                "tensor {name} lacks dtype, shape or data_offsets"
            )));
        };
        let [begin, end] = offsets[..] else {
            return Err(bad(format!(
                "tensor {name}: data_offsets needs two numbers"
            )));
        };
        Ok(Entry {
            dtype,
            shape,
            begin,
            end,
        })
    }
}

/// The model part of an icl checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCheckpoint {
    /// The run's configuration (metadata `config`).
    pub config: Config,
    /// Steps trained (metadata `step`).
    pub step: u64,
    /// The stored precision (metadata `dtype`, which every model tensor agrees with).
    pub dtype: Dtype,
    /// The model's spec, from the config.
    pub spec: ModelSpec,
    /// The flat parameters (widened to f64; exact for f32 storage).
    pub params: Vec<f64>,
    /// The names of the model's tensors (the rest of the file is the trainer's state, `train.*`).
    pub names: Vec<&'static str>,
}

impl ModelCheckpoint {
    /// The model in precision `T` (f32 storage read as f32 is exact).
    pub fn model<T: crate::Scalar>(&self) -> Result<crate::Model<T>> {
        crate::Model::from_params(
            self.spec.clone(),
            self.params.iter().map(|&x| T::of(x)).collect(),
        )
    }
}

/// Check an icl checkpoint's metadata and read its model: format, version, config, step, dtype,
/// and each model tensor (present, of the metadata's dtype, of the spec's shape, finite). Other
/// tensors are left to the caller: the run layer reads the trainer's state from them, firmware
/// ignores them. The config's sizes are validated (the memory budget) before any tensor is read.
pub fn decode_model(f: &File) -> Result<ModelCheckpoint> {
    if f.meta_required("format")? != "icl-checkpoint" {
        return Err(bad("metadata format is not icl-checkpoint"));
    }
    let version = f.meta_required("version")?;
    if version != VERSION {
        return Err(bad(format!(
            "checkpoint version {version:?}; this build reads version {VERSION}"
        )));
    }
    let config = Config::from_toml(f.meta_required("config")?)
        .map_err(|e| bad(format!("its config: {e}")))?;
    let step: u64 = f.meta_number("step")?;
    if step > MAX_STEP {
        return Err(bad(format!(
            "metadata step {step} is past the largest step count, 2^53"
        )));
    }
    let dtype = match f.meta_required("dtype")? {
        "f32" => Dtype::F32,
        "f64" => Dtype::F64,
        other => {
            return Err(bad(format!(
                "metadata dtype {other:?}; f32 or f64 expected"
            )))
        }
    };
    // the precision is stated twice, by the metadata and by the config (train.dtype, which every
    // writer saves the model in); a file where they disagree could be misread either way
    if config.train.dtype != dtype {
        return Err(bad(format!(
            "metadata dtype {} but its config says train.dtype = {}",
            dtype.as_str(),
            config.train.dtype.as_str()
        )));
    }
    let want = match dtype {
        Dtype::F32 => StDtype::F32,
        Dtype::F64 => StDtype::F64,
    };
    let spec = ModelSpec::from_config(&config)?;
    // every model tensor is found and checked (dtype, shape) before the parameters are reserved,
    // so a small file that claims a large model allocates nothing of that size
    let infos = spec.tensors();
    let mut found = Vec::with_capacity(infos.len());
    for t in &infos {
        let x = f.tensor_required(t.name)?;
        if x.dtype != want {
            return Err(bad(format!(
                "tensor {} is {} but the metadata says dtype {}",
                t.name,
                x.dtype.name(),
                dtype.as_str()
            )));
        }
        if x.shape != t.shape {
            return Err(bad(format!(
                "tensor {} has shape {:?}, expected {:?}",
                t.name, x.shape, t.shape
            )));
        }
        found.push(x);
    }
    let mut params = Vec::new();
    params
        .try_reserve_exact(spec.n_params())
        .map_err(|_| bad("no memory for the model's parameters"))?;
    let mut names = Vec::new();
    for (t, x) in infos.iter().zip(found) {
        params.extend(x.to_f64(&t.shape)?);
        names.push(t.name);
    }
    Ok(ModelCheckpoint {
        config,
        step,
        dtype,
        spec,
        params,
        names,
    })
}

/// [`decode_model`] for a file that must hold a model and at most the trainer's state: any tensor
/// that is neither a model tensor nor `train.*` is an error (firmware's reader).
pub fn decode_model_only(bytes: &[u8]) -> Result<ModelCheckpoint> {
    let f = File::parse(bytes)?;
    let m = decode_model(&f)?;
    if let Some(t) = f
        .tensors
        .iter()
        .find(|t| !m.names.contains(&t.name.as_str()) && !t.name.starts_with("train."))
    {
        return Err(bad(format!("unexpected tensor {}", t.name)));
    }
    Ok(m)
}

/// The little JSON a safetensors header needs: objects, strings, arrays of non-negative integers
/// and `null`, with a nesting limit (no recursion on hostile input beyond two levels).
mod json {
    use super::bad;
    use crate::Result;
    use alloc::format;
    use alloc::string::String;
    use alloc::vec::Vec;

    pub struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl<'a> Parser<'a> {
        pub fn new(text: &'a str) -> Self {
            Parser {
                s: text.as_bytes(),
                i: 0,
            }
        }

        fn ws(&mut self) {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
                self.i += 1;
            }
        }

        fn peek(&mut self) -> Option<u8> {
            self.ws();
            self.s.get(self.i).copied()
        }

        fn expect(&mut self, c: u8) -> Result<()> {
            if self.peek() == Some(c) {
                self.i += 1;
                Ok(())
            } else {
                Err(self.err(&format!("{:?} expected", c as char)))
            }
        }

        fn err(&self, what: &str) -> crate::Error {
            bad(format!("header JSON at byte {}: {what}", self.i))
        }

        /// Only whitespace is left.
        pub fn end(&mut self) -> Result<()> {
            match self.peek() {
                None => Ok(()),
                Some(_) => Err(self.err("trailing characters")),
            }
        }

        /// `null` (consumed, `true`) or something else (left, `false`).
        pub fn null(&mut self) -> Result<bool> {
            if self.peek() == Some(b'n') {
                if self.s.get(self.i..self.i + 4) == Some(b"null") {
                    self.i += 4;
                    return Ok(true);
                }
                return Err(self.err("bad literal"));
            }
            Ok(false)
        }

        /// An object; `field(parser, key)` parses each value.
        pub fn object(
            &mut self,
            mut field: impl FnMut(&mut Self, String) -> Result<()>,
        ) -> Result<()> {
            self.expect(b'{')?;
            if self.peek() == Some(b'}') {
                self.i += 1;
                return Ok(());
            }
            loop {
                let k = self.string()?;
                self.expect(b':')?;
                field(self, k)?;
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b'}') => {
                        self.i += 1;
                        return Ok(());
                    }
                    _ => return Err(self.err("',' or '}' expected")),
                }
            }
        }

        /// An array of non-negative integers (that fit in `usize`).
        pub fn numbers(&mut self) -> Result<Vec<usize>> {
            self.expect(b'[')?;
            let mut v = Vec::new();
            if self.peek() == Some(b']') {
                self.i += 1;
                return Ok(v);
            }
            loop {
                v.push(self.number()?);
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b']') => {
                        self.i += 1;
                        return Ok(v);
                    }
                    _ => return Err(self.err("',' or ']' expected")),
                }
            }
        }

        fn number(&mut self) -> Result<usize> {
            self.ws();
            let start = self.i;
            let mut n: usize = 0;
            while let Some(&c) = self.s.get(self.i) {
                if !c.is_ascii_digit() {
                    break;
                }
                n = n
                    .checked_mul(10)
                    .and_then(|n| n.checked_add((c - b'0') as usize))
                    .ok_or_else(|| self.err("number too large"))?;
                self.i += 1;
            }
            if self.i == start {
                return Err(self.err("a non-negative integer expected"));
            }
            if self.i - start > 1 && self.s[start] == b'0' {
                return Err(self.err("leading zero"));
            }
            if let Some(b'.' | b'e' | b'E') = self.s.get(self.i) {
                return Err(self.err("an integer expected"));
            }
            Ok(n)
        }

        fn hex4(&mut self) -> Result<u32> {
            let h = self
                .s
                .get(self.i..self.i + 4)
                .ok_or_else(|| self.err("short \\u escape"))?;
            let mut v = 0u32;
            for &c in h {
                let d = (c as char)
                    .to_digit(16)
                    .ok_or_else(|| self.err("bad \\u escape"))?;
                v = v * 16 + d;
            }
            self.i += 4;
            Ok(v)
        }

        /// A string, unescaped.
        pub fn string(&mut self) -> Result<String> {
            self.expect(b'"')?;
            let mut out = String::new();
            loop {
                // copy the run up to the next quote or backslash
                let start = self.i;
                while let Some(&c) = self.s.get(self.i) {
                    if c == b'"' || c == b'\\' || c < 0x20 {
                        break;
                    }
                    self.i += 1;
                }
                // the input is UTF-8 and the run ends at an ASCII byte, so this cannot fail
                out.push_str(
                    core::str::from_utf8(&self.s[start..self.i])
                        .map_err(|_| self.err("bad UTF-8"))?,
                );
                match self.s.get(self.i) {
                    Some(b'"') => {
                        self.i += 1;
                        return Ok(out);
                    }
                    Some(b'\\') => {
                        self.i += 1;
                        let c = *self
                            .s
                            .get(self.i)
                            .ok_or_else(|| self.err("unterminated string"))?;
                        self.i += 1;
                        match c {
                            b'"' => out.push('"'),
                            b'\\' => out.push('\\'),
                            b'/' => out.push('/'),
                            b'b' => out.push('\u{8}'),
                            b'f' => out.push('\u{c}'),
                            b'n' => out.push('\n'),
                            b'r' => out.push('\r'),
                            b't' => out.push('\t'),
                            b'u' => {
                                let hi = self.hex4()?;
                                let cp = if (0xD800..0xDC00).contains(&hi) {
                                    if self.s.get(self.i..self.i + 2) != Some(b"\\u") {
                                        return Err(self.err("unpaired surrogate"));
                                    }
                                    self.i += 2;
                                    let lo = self.hex4()?;
                                    if !(0xDC00..0xE000).contains(&lo) {
                                        return Err(self.err("unpaired surrogate"));
                                    }
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                } else {
                                    hi
                                };
                                out.push(
                                    char::from_u32(cp).ok_or_else(|| self.err("bad \\u escape"))?,
                                );
                            }
                            _ => return Err(self.err("bad escape")),
                        }
                    }
                    Some(_) => return Err(self.err("control character in a string")),
                    None => return Err(self.err("unterminated string")),
                }
            }
        }
    }

    impl core::fmt::Debug for Parser<'_> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "Parser(at {})", self.i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// A safetensors file from (name, dtype, shape, bytes) and a metadata JSON object.
    fn file(tensors: &[(&str, &str, &[usize], Vec<u8>)], meta: &str) -> Vec<u8> {
        let mut h = String::from("{");
        let mut at = 0;
        let mut data = Vec::new();
        for (name, dt, shape, bytes) in tensors {
            let sh: Vec<String> = shape.iter().map(|s| format!("{s}")).collect();
            h.push_str(&format!(
                "\"{name}\":{{\"dtype\":\"{dt}\",\"shape\":[{}],\"data_offsets\":[{at},{}]}},",
                sh.join(","),
                at + bytes.len()
            ));
            at += bytes.len();
            data.extend_from_slice(bytes);
        }
        h.push_str(&format!("\"__metadata__\":{meta}}}"));
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend(h.as_bytes());
        out.extend(data);
        out
    }

    fn f32s(x: &[f32]) -> Vec<u8> {
        x.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn reads_tensors_and_escaped_metadata() {
        let b = file(
            &[
                ("a", "F32", &[2], f32s(&[1.5, -2.0])),
                ("b", "U8", &[3], vec![1, 2, 3]),
            ],
            r#"{"k":"line\nnext \"q\" \u00e9 \ud83d\ude00 \/"}"#,
        );
        let f = File::parse(&b).unwrap();
        assert_eq!(f.meta("k"), Some("line\nnext \"q\" é 😀 /"));
        assert_eq!(
            f.tensor("a").unwrap().to_f64(&[2]).unwrap(),
            vec![1.5, -2.0]
        );
        assert!(f.tensor("a").unwrap().to_f64(&[1, 2]).is_err());
        assert!(f.tensor("b").unwrap().to_f64(&[3]).is_err());
        assert_eq!(f.tensor("b").unwrap().data, &[1, 2, 3]);
    }

    #[test]
    fn rejects_damage_without_panicking() {
        let good = file(&[("a", "F32", &[2], f32s(&[1.0, 2.0]))], r#"{"x":"y"}"#);
        assert!(File::parse(&good).is_ok());
        // every truncation and every single-byte change either parses or is an error
        for cut in 0..good.len() {
            assert!(File::parse(&good[..cut]).is_err(), "cut {cut}");
        }
        for i in 0..good.len() {
            for v in [0u8, b'"', b'\\', b'{', b'9', 0xff] {
                let mut b = good.clone();
                b[i] = v;
                let _ = File::parse(&b);
            }
        }
        // gaps, overlaps, wrong sizes, duplicates, non-finite values
        let mut gap = file(&[("a", "F32", &[1], f32s(&[1.0]))], "{}");
        gap.extend([0, 0, 0, 0]);
        assert!(File::parse(&gap).is_err());
        assert!(File::parse(&file(&[("a", "F32", &[2], f32s(&[1.0]))], "{}")).is_err());
        assert!(File::parse(&file(
            &[
                ("a", "F32", &[1], f32s(&[1.0])),
                ("a", "F32", &[1], f32s(&[1.0]))
            ],
            "{}"
        ))
        .is_err());
        assert!(File::parse(&file(&[("a", "Q7", &[1], f32s(&[1.0]))], "{}")).is_err());
        let nan = file(&[("a", "F32", &[1], f32s(&[f32::NAN]))], "{}");
        assert!(File::parse(&nan).unwrap().tensors[0].to_f64(&[1]).is_err());
        let huge = file(&[("a", "F32", &[1 << 40, 1 << 40], vec![])], "{}");
        assert!(File::parse(&huge).is_err());
    }

    #[test]
    fn model_round_trip_and_strictness() {
        let cfg = crate::presets::preset("he2025-reduced").unwrap();
        let m = crate::Model::<f32>::init(&cfg).unwrap();
        let toml = cfg.to_toml();
        let esc = toml
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let meta = |dtype: &str, version: &str| {
            format!(
                r#"{{"format":"icl-checkpoint","version":"{version}","dtype":"{dtype}","step":"12","config":"{esc}"}}"#
            )
        };
        let ts: Vec<(&str, &str, Vec<usize>, Vec<u8>)> = m
            .spec
            .tensors()
            .into_iter()
            .map(|t| {
                let b = f32s(&m.params[t.offset..t.offset + t.len()]);
                (t.name, "F32", t.shape.clone(), b)
            })
            .collect();
        let refs: Vec<(&str, &str, &[usize], Vec<u8>)> = ts
            .iter()
            .map(|(n, d, s, b)| (*n, *d, s.as_slice(), b.clone()))
            .collect();
        let b = file(&refs, &meta("f32", "1"));
        let got = decode_model_only(&b).unwrap();
        assert_eq!(got.config, cfg);
        assert_eq!(got.step, 12);
        let params: Vec<f32> = got.params.iter().map(|&x| x as f32).collect();
        assert_eq!(params, m.params);
        assert!(decode_model_only(&file(&refs, &meta("f64", "1"))).is_err());
        assert!(decode_model_only(&file(&refs, &meta("f32", "2"))).is_err());
        let mut extra = refs.clone();
        extra.push(("train.opt.m", "F32", &[1], f32s(&[0.0])));
        assert!(decode_model_only(&file(&extra, &meta("f32", "1"))).is_ok());
        extra.push(("other", "F32", &[1], f32s(&[0.0])));
        assert!(decode_model_only(&file(&extra, &meta("f32", "1"))).is_err());
        assert!(decode_model_only(&file(&refs[1..], &meta("f32", "1"))).is_err());
    }
}
