//! The typed convention (ABI section 14), run natively through
//! weir::testing: the declaration, the row reader over typed batch frames,
//! the patch writer and the typed output frames.

use weir::testing::{self, Cell, Op, PatchEntry, PatchOp, TypedEntry, TypedInput};
use weir::{Config, Error, Field, FieldStatus, FieldType, Patch, Row, TypedAggregate, ValueBuf};

fn row(ts: i64, key: Option<&str>, fields: Vec<Cell>) -> TypedInput {
    TypedInput { timestamp: ts, key: key.map(|k| k.as_bytes().to_vec()), fields }
}

fn set(path: &str, v: Cell) -> PatchOp {
    PatchOp::set(path, v)
}

/// typed_double of plugins/conformance: the worked example's plugin.
fn double_init(_: &Config) -> Result<(), Error> {
    let price = weir::declare_field(Field::int("price").strict());
    weir::register_typed_map(move |r: &Row, p: &mut Patch| {
        let v = r.int(price).ok_or_else(|| weir::error!("price is {}", r.status(price)))?;
        p.set_int("price", v.checked_mul(2).ok_or("price overflows")?);
        Ok(())
    });
    Ok(())
}

/// The bytes of ABI section 14.6: the declaration, the typed batch frame
/// and the typed output frame.
#[test]
fn worked_example() {
    testing::init("{}", double_init).unwrap();
    let decl = [1, 0, 0, 0, 1, 0, 0, 0, 1, 2, 5, 0, 0, 0, b'p', b'r', b'i', b'c', b'e'];
    assert_eq!(testing::fields(), decl);
    let frame = testing::typed_batch_frame(&[FieldType::Int], &[row(5, Some("k"), vec![Cell::Int(12)])]);
    #[rustfmt::skip]
    let want: [u8; 104] = [
        1, 0, 0, 0, 1, 0, 0, 0,
        1, 0, 0, 0, 0, 0, 0, 0, 0x38, 0, 0, 0, 0, 0, 0, 0,
        4, 0, 0, 0, 0x40, 0, 0, 0, 0x48, 0, 0, 0, 0x50, 0, 0, 0,
        1, 0, 0, 0, 0x58, 0, 0, 0, 0x60, 0, 0, 0, 0, 0, 0, 0,
        5, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 1, 0, 0, 0,
        b'k', 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,
        12, 0, 0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(frame, want);
    let out = testing::run_typed_frame(Op::Map, &frame).unwrap();
    #[rustfmt::skip]
    let patch = [
        1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 1, 0, 0, 0,
        1, 5, 0, 0, 0, b'p', b'r', b'i', b'c', b'e', 1, 24, 0, 0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(out, patch);
}

#[test]
fn typed_double() {
    testing::init("{}", double_init).unwrap();
    let rows: Vec<TypedInput> =
        [Cell::Int(21), Cell::Null, Cell::Missing, Cell::Int(i64::MAX / 2 + 1), Cell::Int(i64::MIN / 2)]
            .into_iter()
            .map(|c| TypedInput::new(vec![c]))
            .collect();
    assert_eq!(
        testing::run_typed(Op::Map, &rows),
        vec![
            TypedEntry::patch(0, vec![set("price", Cell::Int(42))]),
            TypedEntry::error(1, "price is null"),
            TypedEntry::error(2, "price is missing"),
            TypedEntry::error(3, "price overflows"),
            TypedEntry::patch(4, vec![set("price", Cell::Int(i64::MIN))]),
        ]
    );
    assert_eq!(testing::ops(), 1);
}

/// Every reader of Row, over rows with present, null, missing and
/// mismatched fields, keys and no keys.
#[test]
fn row_reader() {
    fn init(_: &Config) -> Result<(), Error> {
        let fields =
            [Field::int("i"), Field::float("f"), Field::bool("b"), Field::string("s"), Field::raw("r").required()];
        for (i, f) in fields.into_iter().enumerate() {
            assert_eq!(weir::declare_field(f), i);
        }
        weir::register_typed_map(|r: &Row, p: &mut Patch| {
            let statuses: Vec<&str> = (0..r.fields()).map(|f| r.status(f).name()).collect();
            let text = format!(
                "{} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                r.index(),
                r.timestamp(),
                r.key().map(String::from_utf8_lossy),
                r.int(0),
                r.float(1),
                r.bool(2),
                r.str(3),
                r.bytes(4).map(String::from_utf8_lossy),
                statuses,
            );
            p.set_string("", text);
            let rec = r.record();
            assert_eq!((rec.index(), rec.key, rec.timestamp, rec.value), (r.index(), r.key(), r.timestamp(), None));
            Ok(())
        });
        Ok(())
    }
    testing::init("{}", init).unwrap();
    let full = vec![Cell::Int(-7), Cell::Float(2.5), Cell::Bool(true), Cell::string("h\u{e9}"), Cell::raw("[1, 2]")];
    let empty = vec![Cell::Null, Cell::Missing, Cell::Mismatch, Cell::Null, Cell::raw("")];
    let more = vec![Cell::Int(0), Cell::Float(-0.0), Cell::Bool(false), Cell::string(""), Cell::Mismatch];
    let rows = [row(5, Some("k"), full), row(-1, None, empty), row(i64::MAX, Some(""), more)];
    let got: Vec<String> = testing::run_typed(Op::Map, &rows)
        .into_iter()
        .map(|e| match e {
            TypedEntry::Patch(PatchEntry { ops, .. }) => match &ops[..] {
                [PatchOp::Set(path, Cell::String(s))] if path.is_empty() => String::from_utf8(s.clone()).unwrap(),
                _ => panic!("{:?}", ops),
            },
            e => panic!("{:?}", e),
        })
        .collect();
    assert_eq!(
        got,
        [
            r#"0 5 Some("k") Some(-7) Some(2.5) Some(true) Some("hé") Some("[1, 2]") ["present", "present", "present", "present", "present"]"#,
            r#"1 -1 None None None None None Some("") ["null", "missing", "mismatch", "null", "present"]"#,
            r#"2 9223372036854775807 Some("") Some(0) Some(-0.0) Some(false) Some("") None ["present", "present", "present", "present", "mismatch"]"#,
        ]
    );
}

#[test]
#[should_panic(expected = "weir: field 0 is int, not float")]
fn row_reader_checks_types() {
    fn init(_: &Config) -> Result<(), Error> {
        weir::declare_field(Field::int("n"));
        weir::register_typed_filter(|r: &Row| Ok(r.float(0).is_some()));
        Ok(())
    }
    testing::init("{}", init).unwrap();
    testing::run_typed(Op::Filter, &[TypedInput::new(vec![Cell::Int(1)])]);
}

/// Every operation and header of a patch, set in any order; an error
/// discards the record's patch; a patch of nothing keeps the record.
#[test]
fn patch_writer() {
    fn init(_: &Config) -> Result<(), Error> {
        let n = weir::declare_field(Field::int("n"));
        weir::register_typed_map(move |r: &Row, p: &mut Patch| match r.int(n) {
            Some(0) => Ok(()),
            Some(1) => {
                p.set_null("a");
                p.set_int("b.c", -2);
                p.set_float("f", 0.5);
                p.set_bool("t", true);
                p.set_string(r"x\.y", "q\"");
                p.set_raw("r", b"{\"z\":[1]}");
                p.remove("gone");
                Ok(())
            }
            Some(2) => {
                p.set_int("n", 3);
                p.set_key(Some(b"k2"));
                p.set_timestamp(-9);
                p.from_empty();
                Ok(())
            }
            Some(3) => {
                p.set_key(None);
                Ok(())
            }
            Some(4) => {
                p.set_int("n", 5);
                Err(Error::new("four"))
            }
            _ => {
                p.set_int("n", 6);
                p.keep();
                Ok(())
            }
        });
        Ok(())
    }
    testing::init("{}", init).unwrap();
    let rows: Vec<TypedInput> = (0..6).map(|n| TypedInput::new(vec![Cell::Int(n)])).collect();
    let ops = vec![
        set("a", Cell::Null),
        set("b.c", Cell::Int(-2)),
        set("f", Cell::Float(0.5)),
        set("t", Cell::Bool(true)),
        set(r"x\.y", Cell::string("q\"")),
        set("r", Cell::raw("{\"z\":[1]}")),
        PatchOp::remove("gone"),
    ];
    let headers = PatchEntry {
        index: 2,
        new: true,
        key: Some(Some(b"k2".to_vec())),
        timestamp: Some(-9),
        ops: vec![set("n", Cell::Int(3))],
    };
    assert_eq!(
        testing::run_typed(Op::Map, &rows),
        vec![
            TypedEntry::Keep(0),
            TypedEntry::patch(1, ops),
            TypedEntry::Patch(headers),
            TypedEntry::Patch(PatchEntry { index: 3, key: Some(None), ..Default::default() }),
            TypedEntry::error(4, "four"),
            TypedEntry::Keep(5),
        ]
    );
}

/// flat_map emits keeps and patches in order; an error takes back what was
/// emitted for its record only.
#[test]
fn flat_map() {
    fn init(_: &Config) -> Result<(), Error> {
        let words = weir::declare_field(Field::string("words"));
        weir::register_typed_flat_map(move |r, emit| {
            for w in r.str(words).unwrap_or("").split(' ').filter(|w| !w.is_empty()) {
                match w {
                    "!" => return Err(Error::new("bang")),
                    "=" => emit.keep(),
                    _ => emit.patch().set_string("word", w),
                }
            }
            Ok(())
        });
        Ok(())
    }
    testing::init("{}", init).unwrap();
    let rows: Vec<TypedInput> =
        ["a b", "c = ! d", "", "= e"].iter().map(|s| TypedInput::new(vec![Cell::string(s)])).collect();
    let word = |i, w: &str| TypedEntry::patch(i, vec![set("word", Cell::string(w))]);
    assert_eq!(
        testing::run_typed(Op::FlatMap, &rows),
        vec![word(0, "a"), word(0, "b"), TypedEntry::error(1, "bang"), TypedEntry::Keep(3), word(3, "e")]
    );
    assert_eq!(testing::ops(), 2);
}

#[test]
fn filter() {
    fn init(_: &Config) -> Result<(), Error> {
        let active = weir::declare_field(Field::bool("active"));
        weir::register_typed_filter(move |r| match r.status(active) {
            FieldStatus::Mismatch => Err(Error::new("active is not a bool")),
            _ => Ok(r.bool(active) == Some(true)),
        });
        Ok(())
    }
    testing::init("{}", init).unwrap();
    let rows: Vec<TypedInput> = [Cell::Bool(true), Cell::Bool(false), Cell::Missing, Cell::Null, Cell::Mismatch]
        .into_iter()
        .map(|c| TypedInput::new(vec![c]))
        .collect();
    assert_eq!(
        testing::run_typed(Op::Filter, &rows),
        vec![TypedEntry::Keep(0), TypedEntry::error(4, "active is not a bool")]
    );
    assert_eq!(testing::ops(), 4);
    // No typed map: every record is rejected.
    assert_eq!(testing::run_typed(Op::Map, &rows[..1]), vec![TypedEntry::error(0, "plugin has no map handler")]);
}

#[test]
fn declarations() {
    fn raw(_: &Config) -> Result<(), Error> {
        weir::register_map(|_, _| Ok(()));
        Ok(())
    }
    testing::init("{}", raw).unwrap();
    assert_eq!(testing::fields(), Vec::<u8>::new(), "a raw plugin answers weir_fields with the empty region");
    fn no_fields(_: &Config) -> Result<(), Error> {
        weir::register_typed_filter(|_| Ok(true));
        Ok(())
    }
    testing::init("{}", no_fields).unwrap();
    assert_eq!(testing::fields(), [1, 0, 0, 0, 0, 0, 0, 0]);
    fn flags(c: &Config) -> Result<(), Error> {
        weir::declare_field(Field::raw(c.string("path", "a")?).required());
        weir::declare_field(Field::float("b").strict().required());
        weir::register_typed_filter(|_| Ok(true));
        Ok(())
    }
    testing::init(r#"{"path":"x\\.y"}"#, flags).unwrap();
    let want = [&[1, 0, 0, 0, 2, 0, 0, 0, 5, 1, 4, 0, 0, 0][..], b"x\\.y", &[2, 3, 1, 0, 0, 0], b"b"].concat();
    assert_eq!(testing::fields(), want);
}

#[test]
fn declaration_errors() {
    fn bad_path(_: &Config) -> Result<(), Error> {
        weir::declare_field(Field::int("a"));
        weir::declare_field(Field::int("user..age"));
        weir::register_typed_map(|_, _| Ok(()));
        Ok(())
    }
    let msg = r#"weir: declared field 1 ("user..age"): malformed field path "user..age": empty segment at byte 5"#;
    assert_eq!(testing::init("{}", bad_path), Err(msg.to_string()));
    fn twice(_: &Config) -> Result<(), Error> {
        weir::declare_field(Field::int("a"));
        weir::declare_field(Field::string("a"));
        weir::register_typed_map(|_, _| Ok(()));
        Ok(())
    }
    assert_eq!(
        testing::init("{}", twice),
        Err(r#"weir: declared field 1 ("a"): the same path as field 0"#.to_string())
    );
    fn no_function(_: &Config) -> Result<(), Error> {
        weir::declare_field(Field::int("a"));
        weir::register_map(|_, _| Ok(()));
        Ok(())
    }
    let msg = "weir: fields declared, but no typed function registered";
    assert_eq!(testing::init("{}", no_function), Err(msg.to_string()));
    fn both(_: &Config) -> Result<(), Error> {
        weir::register_filter(|_| Ok(true));
        weir::register_typed_filter(|_| Ok(true));
        Ok(())
    }
    assert_eq!(testing::init("{}", both), Err("weir: filter function already registered".to_string()));
}

/// A frame the host would never send is an error (a trap in the exports),
/// never a panic.
#[test]
fn malformed_frames() {
    testing::init("{}", double_init).unwrap();
    let rows = [row(1, Some("key"), vec![Cell::Int(2)]), row(2, None, vec![Cell::Null])];
    let frame = testing::typed_batch_frame(&[FieldType::Int], &rows);
    assert!(testing::run_typed_frame(Op::Map, &frame).is_ok());
    for cut in 0..frame.len() {
        assert!(testing::run_typed_frame(Op::Map, &frame[..cut]).is_err(), "cut at {}", cut);
    }
    let breaks: &[(usize, u8, &str)] = &[
        (8, 2, "the timestamp column must be of type int without statuses"),
        (24, 9, "typed batch column of an unknown type"),
        (28, 0, "typed batch column without statuses"),
        (44, 0x41, "typed batch region not aligned to 8 bytes"),
        (48, 0xf8, "typed batch region outside the frame"),
    ];
    for (at, byte, what) in breaks {
        let mut bad = frame.clone();
        bad[*at] = *byte;
        assert_eq!(testing::run_typed_frame(Op::Map, &bad).unwrap_err().what, *what, "byte {}", at);
    }
    let status = u32::from_le_bytes(frame[44..48].try_into().unwrap()) as usize;
    let mut bad = frame.clone();
    bad[status] = 4;
    assert_eq!(testing::run_typed_frame(Op::Map, &bad).unwrap_err().what, "typed batch status byte out of range");
    let offsets = u32::from_le_bytes(frame[32..36].try_into().unwrap()) as usize;
    let mut bad = frame;
    bad[offsets + 4] = 9;
    assert_eq!(testing::run_typed_frame(Op::Map, &bad).unwrap_err().what, "typed batch string offsets out of order");
}

/// The conformance average over a typed float field.
struct Avg;

impl TypedAggregate for Avg {
    type Acc = (f64, i64);
    fn create(&mut self) -> (f64, i64) {
        (0.0, 0)
    }
    fn add(&mut self, acc: &mut (f64, i64), r: &Row) -> Result<(), Error> {
        let n = r.float(0).ok_or_else(|| weir::error!("n is {}", r.status(0)))?;
        acc.0 += n;
        acc.1 += 1;
        Ok(())
    }
    fn merge(&mut self, a: (f64, i64), b: (f64, i64)) -> (f64, i64) {
        (a.0 + b.0, a.1 + b.1)
    }
    fn result(&mut self, acc: &(f64, i64), out: &mut ValueBuf) -> Result<(), Error> {
        weir::json::Writer::new(out).float(acc.0 / acc.1 as f64);
        Ok(())
    }
    fn encode(&mut self, acc: &(f64, i64), out: &mut ValueBuf) {
        weir::append_f64(out, acc.0);
        weir::append_i64(out, acc.1);
    }
    fn decode(&mut self, b: &[u8]) -> Result<(f64, i64), Error> {
        let mut d = weir::AccDecoder::new(b);
        let acc = (d.f64(), d.i64());
        d.end()?;
        Ok(acc)
    }
}

fn enc(sum: f64, count: i64) -> Vec<u8> {
    let mut b = Vec::new();
    weir::append_f64(&mut b, sum);
    weir::append_i64(&mut b, count);
    b
}

#[test]
fn typed_aggregate() {
    fn init(_: &Config) -> Result<(), Error> {
        weir::declare_field(Field::float("n"));
        weir::register_typed_aggregate(Avg);
        Ok(())
    }
    testing::init("{}", init).unwrap();
    assert_eq!(testing::ops(), 8);
    assert_eq!(testing::fields(), [&[1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 1, 0, 0, 0][..], b"n"].concat());
    let fresh = testing::agg_create().unwrap();
    assert_eq!(fresh, enc(0.0, 0));
    let n = |c: Cell| TypedInput::new(vec![c]);
    let got = testing::typed_agg_add(&[
        (fresh, vec![n(Cell::Float(1.0)), n(Cell::Missing), n(Cell::Float(2.5))]),
        (vec![1, 2, 3], vec![n(Cell::Float(1.0))]),
        (enc(1.0, 1), vec![]),
        (enc(1.0, 1), vec![n(Cell::Null), n(Cell::Float(3.0))]),
    ]);
    assert_eq!(got[0], (vec![(1, "n is missing".to_string())], enc(3.5, 2)));
    let bad = "bad accumulator: weir: accumulator of 3 bytes ends inside the 8-byte number at byte 0";
    assert_eq!(got[1], (vec![(0, bad.to_string())], vec![1, 2, 3]));
    assert_eq!(got[2], (vec![], enc(1.0, 1)));
    assert_eq!(got[3], (vec![(0, "n is null".to_string())], enc(4.0, 2)));
    assert_eq!(testing::agg_merge(&[(enc(3.5, 2), enc(1.0, 1))]), vec![Ok(enc(4.5, 3))]);
    assert_eq!(testing::agg_result(&[enc(3.0, 2)]), vec![Ok(Some(b"1.5".to_vec()))]);
    // The raw entry point has no raw aggregate to call.
    let raw = testing::agg_add(&[(enc(0.0, 0), vec![testing::Input::value(r#"{"n":1}"#)])]);
    assert_eq!(raw, vec![(vec![(0, "plugin has no raw aggregate handler".to_string())], enc(0.0, 0))]);
}
