//! TensorBoard event files: the training curves of a run, live, for `tensorboard --logdir runs/`
//! (and wandb, which imports them).
//!
//! A run folder holds one event file per training session, `events.out.tfevents.<unix
//! seconds>.icl` (TensorBoard reads every file whose name contains `tfevents`, in name order, so
//! the ten-digit seconds order the sessions). Each holds a `file_version` event and then one event
//! per `metrics.csv` row, written (and handed to the OS) as the row is logged:
//!
//! * `train/loss`: the row's loss;
//! * `<group>/<column>` for every probe column of `metrics.csv` (`omega/omega_0`, `mu/mu_0`, ...),
//!   grouped by the probe that logs it, so TensorBoard shows one section per probe;
//! * `train/lr`: the learning rate (`train.lr`);
//! * `train/steps_per_second`: training steps per wall-clock second since the previous row of the
//!   session (or its start); rows a resumed session writes from its checkpoint have none;
//! * under Garg et al.'s curriculum (GPT-2 runs with `task.curriculum`): `curriculum/d` and
//!   `curriculum/L`, the dimension and context length of the row's last step, and
//!   `curriculum/loss_over_Ey2`, the loss over E y² at that dimension (Garg et al.'s squared
//!   error / d; the raw loss rises as the curriculum grows d).
//!
//! Each event carries its wall time, so event files are outside icl's same-seed-same-bytes
//! guarantee (which `model.safetensors`, `metrics.csv` and `snapshots.safetensors` keep).
//!
//! A resumed run continues the stream without repeating or losing a step ([`EventLog::open`]): the
//! earlier sessions' files keep the events of the checkpoint's rows (a prefix of each file, so
//! their wall times stay), the rest (events of steps after the checkpoint, a record cut by a
//! kill) goes, and the new session's file starts with any checkpointed row that no file held.
//! So the steps of all event files of a run are the steps of its `metrics.csv`, each once.
//!
//! # The format
//!
//! A file is a sequence of TFRecords, each
//!
//! ```text
//! u64 LE  n = data length
//! u32 LE  masked_crc32c(the 8 length bytes)
//! [u8; n] data (one serialized Event)
//! u32 LE  masked_crc32c(data)
//! ```
//!
//! with CRC-32C (Castagnoli; `crc32c("123456789") = 0xE3069283`) masked as
//! `mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8` (wrapping, u32). The data is the protocol
//! buffer `tensorflow.Event`, of which icl writes (and reads) only these fields:
//!
//! ```text
//! Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//! Summary { repeated Value value = 1; }
//! Value   { string tag = 1; float simple_value = 2; }
//! ```
//!
//! encoded by hand: a field is a varint key `(number << 3) | wire type` and then a little-endian
//! `double` (wire type 1), a varint (0), a little-endian `float` (5), or a varint length and the
//! bytes (2: strings and messages). Fields at their default (step 0) are left out, as protobuf
//! does; the first event of a file has `file_version = "brain.Event:2"`.
use crate::error::{Result, RunError};
use icl_core::config::Config;
use icl_core::families::gpt2::objective::Curriculum;
use icl_core::train::{Column, LogRow};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Every event file's name starts so (TensorBoard looks for `tfevents`).
pub const FILE_PREFIX: &str = "events.out.tfevents.";

/// The `file_version` of the first event of a file.
pub const FILE_VERSION: &str = "brain.Event:2";

/// The largest event file icl reads back (to continue a resumed run's stream): 1 GiB.
pub const MAX_FILE: u64 = 1 << 30;

/// `mask(crc32c(data))` (see the module's documentation).
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let c = crc32c::crc32c(data);
    // (c >> 15) | (c << 17)
    c.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// One TFRecord: the length, its masked CRC, `data` and its masked CRC.
pub fn record(data: &[u8]) -> Vec<u8> {
    let len = (data.len() as u64).to_le_bytes();
    let mut out = Vec::with_capacity(data.len() + 16);
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc32c(data).to_le_bytes());
    out
}

/// The records of `bytes`: each record's data and the offset where it ends, up to the first
/// that is cut short or fails its CRC; with it, why reading stopped there (`None`: at the end).
pub fn records(bytes: &[u8]) -> (Vec<(&[u8], usize)>, Option<String>) {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let Some(head) = rest.get(..12) else {
            return (out, Some(format!("a record cut short at byte {at}")));
        };
        let (len, crc) = head.split_at(8);
        if masked_crc32c(len).to_le_bytes() != crc {
            return (out, Some(format!("bad length CRC at byte {at}")));
        }
        let n = u64::from_le_bytes(len.try_into().unwrap_or([0; 8]));
        let Some(total) = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_add(16))
            .filter(|&t| t <= rest.len())
        else {
            return (out, Some(format!("a record cut short at byte {at}")));
        };
        let data = &rest[12..total - 4];
        if masked_crc32c(data).to_le_bytes() != rest[total - 4..total] {
            return (out, Some(format!("bad data CRC at byte {at}")));
        }
        at += total;
        out.push((data, at));
    }
    (out, None)
}

/// The fields of a `tensorflow.Event` that icl writes (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Event {
    pub wall_time: f64,
    pub step: i64,
    /// Set in a file's first event only.
    pub file_version: Option<String>,
    /// The summary's scalars, `(tag, simple_value)`; empty: no summary.
    pub values: Vec<(String, f32)>,
}

fn varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// A length-delimited field (wire type 2).
fn bytes_field(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    varint(out, (number << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

impl Event {
    /// The serialized protocol buffer.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        varint(&mut out, (1 << 3) | 1);
        out.extend_from_slice(&self.wall_time.to_le_bytes());
        if self.step != 0 {
            varint(&mut out, 2 << 3);
            varint(&mut out, self.step as u64);
        }
        if let Some(v) = &self.file_version {
            bytes_field(&mut out, 3, v.as_bytes());
        }
        if !self.values.is_empty() {
            let mut summary = Vec::new();
            for (tag, x) in &self.values {
                let mut value = Vec::new();
                bytes_field(&mut value, 1, tag.as_bytes());
                varint(&mut value, (2 << 3) | 5);
                value.extend_from_slice(&x.to_le_bytes());
                bytes_field(&mut summary, 1, &value);
            }
            bytes_field(&mut out, 5, &summary);
        }
        out
    }

    /// Decode a serialized Event, keeping the fields above and skipping any other.
    pub fn decode(data: &[u8]) -> std::result::Result<Event, String> {
        let mut e = Event::default();
        for (number, field) in fields(data)? {
            match (number, field) {
                (1, Field::Fixed64(x)) => e.wall_time = f64::from_bits(x),
                (2, Field::Varint(x)) => e.step = x as i64,
                (3, Field::Bytes(b)) => e.file_version = Some(utf8(b)?),
                (5, Field::Bytes(summary)) => {
                    for (n, value) in fields(summary)? {
                        let (1, Field::Bytes(value)) = (n, value) else {
                            continue;
                        };
                        let (mut tag, mut x) = (None, None);
                        for (n, f) in fields(value)? {
                            match (n, f) {
                                (1, Field::Bytes(b)) => tag = Some(utf8(b)?),
                                (2, Field::Fixed32(v)) => x = Some(f32::from_bits(v)),
                                _ => {}
                            }
                        }
                        // values of other kinds (images, tensors) are not icl's
                        if let (Some(tag), Some(x)) = (tag, x) {
                            e.values.push((tag, x));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(e)
    }

    /// The value of `tag`, if the event has it.
    pub fn value(&self, tag: &str) -> Option<f32> {
        self.values.iter().find(|(t, _)| t == tag).map(|(_, x)| *x)
    }
}

fn utf8(b: &[u8]) -> std::result::Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "a string field is not UTF-8".into())
}

/// A protocol buffer field's value.
enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// The fields of a serialized message, `(number, value)`, in order.
fn fields(mut b: &[u8]) -> std::result::Result<Vec<(u64, Field<'_>)>, String> {
    fn read_varint(b: &mut &[u8]) -> std::result::Result<u64, String> {
        let mut x = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = b.split_first().ok_or("a varint cut short")?;
            *b = rest;
            x |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(x);
            }
        }
        Err("a varint longer than 10 bytes".into())
    }
    fn take<'a>(b: &mut &'a [u8], n: u64) -> std::result::Result<&'a [u8], String> {
        let n = usize::try_from(n).map_err(|_| "a field too long")?;
        if n > b.len() {
            return Err("a field cut short".into());
        }
        let (head, rest) = b.split_at(n);
        *b = rest;
        Ok(head)
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = read_varint(&mut b)?;
        let field = match key & 7 {
            0 => Field::Varint(read_varint(&mut b)?),
            1 => Field::Fixed64(u64::from_le_bytes(
                take(&mut b, 8)?.try_into().unwrap_or([0; 8]),
            )),
            2 => {
                let n = read_varint(&mut b)?;
                Field::Bytes(take(&mut b, n)?)
            }
            5 => Field::Fixed32(u32::from_le_bytes(
                take(&mut b, 4)?.try_into().unwrap_or([0; 4]),
            )),
            w => return Err(format!("wire type {w} (groups are not supported)")),
        };
        out.push((key >> 3, field));
    }
    Ok(out)
}

/// The event files of `dir`, in name order (TensorBoard's reading order); none if `dir` is
/// missing.
pub fn event_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(RunError::Os(dir.into(), e)),
    };
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(|e| RunError::Os(dir.into(), e))?;
        if e.file_name().to_string_lossy().starts_with(FILE_PREFIX) && e.path().is_file() {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Every event of an event file, in order; a record cut short or failing its CRC, or an event
/// that does not decode, is [`RunError::Corrupt`].
pub fn read_events(path: &Path) -> Result<Vec<Event>> {
    let bytes = crate::folder::read_limited(path, MAX_FILE, "TensorBoard event file")?;
    let (recs, stop) = records(&bytes);
    if let Some(why) = stop {
        return Err(RunError::Corrupt(path.into(), why));
    }
    recs.iter()
        .map(|(data, _)| Event::decode(data).map_err(|m| RunError::Corrupt(path.into(), m)))
        .collect()
}

/// The events of every event file of a run folder, in TensorBoard's reading order.
pub fn read_run(dir: &Path) -> Result<Vec<Event>> {
    let mut out = Vec::new();
    for f in event_files(dir)? {
        out.extend(read_events(&f)?);
    }
    Ok(out)
}

/// Seconds since the Unix epoch, now.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The event file of one training session, written as the trainer logs rows.
#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    file: std::fs::File,
    /// Tags of the row's values after `train/loss`: one per column, then `train/lr`.
    tags: Vec<String>,
    lr: f64,
    /// Rows of the run in the event files (this session's and the earlier ones').
    written: usize,
    /// The trainer's step count and the time of the last row written in this session (or of
    /// its start), for `train/steps_per_second`.
    last: (u64, Instant),
    /// The run's curriculum and config, for the `curriculum/*` scalars (`None`: no curriculum).
    stages: Option<(Curriculum, Box<Config>)>,
}

/// The `curriculum/*` scalars of a row at `step` (steps done) of a run of `cfg` under `c`
/// ([`crate::eval::row_stage`]).
fn stage_values(c: &Curriculum, cfg: &Config, step: u64, loss: f64) -> [(String, f32); 3] {
    let (d, l, norm) = crate::eval::row_stage(cfg, c, step);
    [
        ("curriculum/d".into(), d as f32),
        ("curriculum/L".into(), l as f32),
        ("curriculum/loss_over_Ey2".into(), (loss / norm) as f32),
    ]
}

impl EventLog {
    /// Start the event file of a session in the staging folder `dir`, continuing the stream of
    /// the event files in `from` (the staging folder itself, or the finished run a session
    /// extends; a fresh run has none there) for a trainer whose rows are `rows` (by step) at
    /// step `step`, started at `t0`:
    ///
    /// 1. the earlier files keep, in `dir`, their longest prefix of events whose steps are those
    ///    of `rows`, in order (a file left with no row is removed);
    /// 2. a new file, named after every earlier one, gets the `file_version` event and the rows
    ///    no earlier file held (without `train/steps_per_second`).
    ///
    /// `cfg`: the run's config; its curriculum, where it has one, adds the `curriculum/*`
    /// scalars to every row.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        dir: &Path,
        from: &Path,
        rows: &[&LogRow],
        columns: &[Column],
        lr: f64,
        step: u64,
        t0: Instant,
        cfg: Option<&Config>,
    ) -> Result<EventLog> {
        let stages = cfg.and_then(|c| Some((Curriculum::of(&c.task)?, Box::new(c.clone()))));
        let kept = keep_prefix(dir, from, rows)?;
        let path = dir.join(new_name(dir)?);
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| RunError::Os(path.clone(), e))?;
        let mut tags: Vec<String> = columns
            .iter()
            .map(|c| format!("{}/{}", c.group, c.name))
            .collect();
        tags.push("train/lr".into());
        let mut log = EventLog {
            path,
            file,
            tags,
            lr,
            written: kept,
            last: (step, t0),
            stages,
        };
        let head = Event {
            wall_time: now(),
            file_version: Some(FILE_VERSION.into()),
            ..Event::default()
        };
        let mut bytes = record(&head.encode());
        for r in &rows[kept..] {
            bytes.extend(record(&log.event(r, None).encode()));
        }
        log.written = rows.len();
        log.append(&bytes)?;
        Ok(log)
    }

    /// The event file of this session.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write the rows of `rows` (the trainer's, by step) that are not in the event files yet,
    /// with the trainer at `step`; one event each, handed to the OS at once (TensorBoard sees it).
    pub fn rows(&mut self, rows: &[&LogRow], step: u64) -> Result<()> {
        let Some(new) = rows.get(self.written..).filter(|n| !n.is_empty()) else {
            return Ok(());
        };
        let secs = self.last.1.elapsed().as_secs_f64();
        let rate = (step.saturating_sub(self.last.0) as f64 / secs.max(1e-9)) as f32;
        let mut bytes = Vec::new();
        for r in new {
            bytes.extend(record(&self.event(r, Some(rate)).encode()));
        }
        self.append(&bytes)?;
        self.written = rows.len();
        self.last = (step, Instant::now());
        Ok(())
    }

    /// Flush the file to the disk (at a checkpoint).
    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| RunError::Os(self.path.clone(), e))
    }

    fn event(&self, r: &LogRow, rate: Option<f32>) -> Event {
        let mut values = vec![("train/loss".to_string(), r.loss as f32)];
        let xs = r.values.iter().copied().chain([self.lr]);
        values.extend(self.tags.iter().cloned().zip(xs.map(|x| x as f32)));
        values.extend(rate.map(|x| ("train/steps_per_second".to_string(), x)));
        if let Some((c, cfg)) = &self.stages {
            values.extend(stage_values(c, cfg, r.step, r.loss));
        }
        Event {
            wall_time: now(),
            step: r.step as i64,
            file_version: None,
            values,
        }
    }

    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .map_err(|e| RunError::Os(self.path.clone(), e))
    }
}

/// Step 1 of [`EventLog::open`]: the number of `rows` the kept prefixes hold.
fn keep_prefix(dir: &Path, from: &Path, rows: &[&LogRow]) -> Result<usize> {
    let same = from == dir;
    if !same {
        // a session extending a finished run: the finished run's files replace any left here
        for f in event_files(dir)? {
            std::fs::remove_file(&f).map_err(|e| RunError::Os(f.clone(), e))?;
        }
    }
    let mut kept = 0;
    for f in event_files(from)? {
        let bytes = crate::folder::read_limited(&f, MAX_FILE, "TensorBoard event file")?;
        let (recs, _) = records(&bytes);
        let (mut end, mut any) = (0, false);
        for (data, at) in recs {
            let Ok(e) = Event::decode(data) else { break };
            if e.values.is_empty() {
                // the file_version event
                end = at;
                continue;
            }
            if rows.get(kept).is_none_or(|r| r.step as i64 != e.step) {
                break;
            }
            (kept, end, any) = (kept + 1, at, true);
        }
        let Some(name) = f.file_name() else { continue };
        let to = dir.join(name);
        if !any {
            if same {
                std::fs::remove_file(&f).map_err(|e| RunError::Os(f.clone(), e))?;
            }
        } else if !same || end < bytes.len() {
            crate::folder::atomic_write(&to, &bytes[..end])?;
        }
    }
    Ok(kept)
}

/// `events.out.tfevents.<unix seconds>.icl`, after every event file of `dir` in name order.
fn new_name(dir: &Path) -> Result<String> {
    let secs_of = |p: &PathBuf| -> Option<u64> {
        let name = p.file_name()?.to_str()?;
        name.strip_prefix(FILE_PREFIX)?
            .split('.')
            .next()?
            .parse()
            .ok()
    };
    let latest = event_files(dir)?.iter().filter_map(secs_of).max();
    let secs = (now() as u64).max(latest.map_or(0, |s| s + 1));
    Ok(format!("{FILE_PREFIX}{secs:010}.icl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// CRC-32C's check value, and records byte for byte as TensorBoard's own writer frames them
    /// (`tensorboard.summary.writer.record_writer.RecordWriter` over
    /// `tensorboard.compat.proto.event_pb2.Event(...).SerializeToString()`, tensorboard 2.21.0).
    #[test]
    fn records_match_tensorboards_own_writer() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        // Event(wall_time=1.5, file_version="brain.Event:2")
        let head = Event {
            wall_time: 1.5,
            file_version: Some(FILE_VERSION.into()),
            ..Event::default()
        };
        assert_eq!(
            head.encode(),
            hex("09000000000000f83f1a0d627261696e2e4576656e743a32")
        );
        assert_eq!(
            record(&head.encode()),
            hex("1800000000000000a37f4b2209000000000000f83f1a0d627261696e2e4576656e743a322a28646c")
        );
        // Event(wall_time=1700000000.25, step=300, summary=Summary(value=[
        //   Value(tag="train/loss", simple_value=0.25), Value(tag="omega/omega_0", simple_value=-1.5)]))
        let row = Event {
            wall_time: 1_700_000_000.25,
            step: 300,
            file_version: None,
            values: vec![("train/loss".into(), 0.25), ("omega/omega_0".into(), -1.5)],
        };
        let bytes = hex(
            "3700000000000000e7e8ca590900001040fc54d94110ac022a290a110a0a747261696e2f6c6f7373150000803e0a140a0d6f6d6567612f6f6d6567615f30150000c0bf639535b5",
        );
        assert_eq!(record(&row.encode()), bytes);
        // and back
        let mut two = record(&head.encode());
        two.extend(&bytes);
        let (recs, stop) = records(&two);
        assert_eq!(stop, None);
        let back: Vec<Event> = recs
            .iter()
            .map(|(d, _)| Event::decode(d).unwrap())
            .collect();
        assert_eq!(back, [head, row]);
        assert_eq!(recs[1].1, two.len());
    }

    /// A record cut short or with a flipped bit ends the reading there, keeping the records
    /// before it.
    #[test]
    fn a_cut_or_damaged_record_stops_the_reading() {
        let e = |step| Event {
            wall_time: 2.0,
            step,
            file_version: None,
            values: vec![("train/loss".into(), 1.0)],
        };
        let mut bytes = record(&e(1).encode());
        let first = bytes.len();
        bytes.extend(record(&e(2).encode()));
        for cut in first + 1..bytes.len() {
            let (recs, stop) = records(&bytes[..cut]);
            assert_eq!(recs.len(), 1, "cut at {cut}");
            assert!(stop.unwrap().contains("cut short"));
        }
        for flip in first..bytes.len() {
            let mut b = bytes.clone();
            b[flip] ^= 0x10;
            let (recs, stop) = records(&b);
            assert_eq!((recs.len(), recs[0].1), (1, first), "bit flipped at {flip}");
            assert!(stop.unwrap().contains("CRC"), "bit flipped at {flip}");
        }
        assert!(Event::decode(&[0x0b]).is_err());
        assert!(Event::decode(&[0x2a, 0x05, 0x0a]).is_err());
    }

    fn row(step: u64, loss: f64) -> LogRow {
        LogRow {
            step,
            loss,
            values: vec![loss * 2.0],
        }
    }

    /// Sessions that stop after writing rows a checkpoint does not hold (and one cut mid-record)
    /// continue the stream: every row once, in order, and each earlier file keeps its prefix.
    #[test]
    fn a_curriculum_run_logs_its_stage_and_the_loss_over_its_e_y2() {
        let dir = std::env::temp_dir().join(format!("icl-tb-curriculum-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut cfg = icl_core::presets::preset("garg-linear-tiny").unwrap();
        let all: Vec<LogRow> = [1u64, 2000, 2001, 4000, 50_000]
            .iter()
            .map(|&s| row(s, 10.0))
            .collect();
        let refs: Vec<&LogRow> = all.iter().collect();
        let t0 = Instant::now();
        let mut log = EventLog::open(&dir, &dir, &[], &[], 1e-4, 0, t0, Some(&cfg)).unwrap();
        log.rows(&refs, 50_000).unwrap();
        drop(log);
        // Garg et al.'s curriculum written out: d = min(5 + floor(t / 2000), 20) and
        // L = min(10 + 2 floor(t / 2000), 40) at 0-based step t = row step - 1
        let evs: Vec<Event> = read_run(&dir)
            .unwrap()
            .into_iter()
            .filter(|e| !e.values.is_empty())
            .collect();
        let want: [(f64, f32); 5] = [
            (5.0, 10.0),
            (5.0, 10.0),
            (6.0, 12.0),
            (6.0, 12.0),
            (20.0, 40.0),
        ];
        assert_eq!(evs.len(), want.len());
        for (e, (d, l)) in evs.iter().zip(want) {
            assert_eq!(e.value("curriculum/d"), Some(d as f32), "step {}", e.step);
            assert_eq!(e.value("curriculum/L"), Some(l));
            assert_eq!(e.value("curriculum/loss_over_Ey2"), Some((10.0 / d) as f32));
        }
        // without a curriculum, none of them
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        cfg.set("task.curriculum", "false").unwrap();
        let mut log = EventLog::open(&dir, &dir, &[], &[], 1e-4, 0, t0, Some(&cfg)).unwrap();
        log.rows(&refs, 50_000).unwrap();
        drop(log);
        let evs = read_run(&dir).unwrap();
        assert!(evs.iter().all(|e| e.value("curriculum/d").is_none()));
        assert!(evs.iter().any(|e| e.value("train/loss").is_some()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sessions_continue_the_stream_without_repeats_or_gaps() {
        let dir = std::env::temp_dir().join(format!("icl-tb-sessions-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cols = [Column {
            group: "omega",
            name: "omega_0".into(),
        }];
        let all: Vec<LogRow> = (1..=30).map(|s| row(s * 10, 1.0 / s as f64)).collect();
        let refs = |n: usize| all[..n].iter().collect::<Vec<_>>();
        let steps = |evs: &[Event]| -> Vec<i64> {
            evs.iter()
                .filter(|e| !e.values.is_empty())
                .map(|e| e.step)
                .collect()
        };
        let t0 = Instant::now();
        // session 1: 12 rows written, the checkpoint holds 8
        let mut a = EventLog::open(&dir, &dir, &[], &cols, 0.1, 0, t0, None).unwrap();
        for n in 1..=12 {
            a.rows(&refs(n), all[n - 1].step).unwrap();
        }
        let first = a.path().to_path_buf();
        drop(a);
        // session 2 from the checkpoint: 8 rows kept, then 20 written, the last one cut short
        let mut b = EventLog::open(&dir, &dir, &refs(8), &cols, 0.1, 80, t0, None).unwrap();
        assert_ne!(b.path(), first);
        assert_eq!(steps(&read_events(&first).unwrap()).len(), 8);
        b.rows(&refs(20), 200).unwrap();
        let second = b.path().to_path_buf();
        drop(b);
        let len = std::fs::metadata(&second).unwrap().len();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&second)
            .unwrap();
        f.set_len(len - 3).unwrap();
        drop(f);
        // session 3 from a checkpoint at row 15, whose state holds 15 rows
        let mut c = EventLog::open(&dir, &dir, &refs(15), &cols, 0.1, 150, t0, None).unwrap();
        c.rows(&refs(30), 300).unwrap();
        let evs = read_run(&dir).unwrap();
        let want: Vec<i64> = all.iter().map(|r| r.step as i64).collect();
        assert_eq!(steps(&evs), want);
        for (e, r) in evs.iter().filter(|e| !e.values.is_empty()).zip(&all) {
            assert_eq!(e.value("train/loss"), Some(r.loss as f32));
            assert_eq!(e.value("omega/omega_0"), Some(r.values[0] as f32));
            assert_eq!(e.value("train/lr"), Some(0.1));
        }
        assert_eq!(event_files(&dir).unwrap().len(), 3);
        // session 4 restarts from a run killed before its first checkpoint (no rows): the
        // earlier files go
        EventLog::open(&dir, &dir, &[], &cols, 0.1, 0, t0, None).unwrap();
        assert_eq!(steps(&read_run(&dir).unwrap()), Vec::<i64>::new());
        assert_eq!(event_files(&dir).unwrap().len(), 1);
        // a session extending a finished run copies its files (from the run, not the staging
        // folder) and writes only what follows
        let (run, stage) = (dir.join("run"), dir.join("stage"));
        std::fs::create_dir_all(&run).unwrap();
        std::fs::create_dir_all(&stage).unwrap();
        let mut done = EventLog::open(&run, &run, &[], &cols, 0.1, 0, t0, None).unwrap();
        done.rows(&refs(10), 100).unwrap();
        std::fs::write(stage.join(format!("{FILE_PREFIX}0000000001.icl")), b"junk").unwrap();
        let mut more = EventLog::open(&stage, &run, &refs(10), &cols, 0.1, 100, t0, None).unwrap();
        more.rows(&refs(30), 300).unwrap();
        assert_eq!(steps(&read_run(&stage).unwrap()), want);
        assert_eq!(steps(&read_run(&run).unwrap()), want[..10]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
