//! The SDK's dispatch, run natively through weir::testing.

use weir::testing::{self, Entry, Input, Op};
use weir::{AggContext, Aggregate, Config, Error, Output, Record, ValueBuf};

fn rec(index: u32, key: Option<Option<&[u8]>>, ts: Option<i64>, headers: Option<Vec<(&[u8], &[u8])>>, value: Option<&[u8]>) -> Entry {
    Entry::Record {
        index,
        key: key.map(|k| k.map(|k| k.to_vec())),
        timestamp: ts,
        headers: headers.map(|hs| hs.into_iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect()),
        value: value.map(|v| v.to_vec()),
    }
}

#[test]
fn map_outputs() {
    fn init(_: &Config) -> Result<(), Error> {
        weir::register_map(|r: &Record, out: &mut Output| {
            match r.value_bytes() {
                b"keep" => {}
                b"upper" => out.value().extend_from_slice(&r.value_bytes().to_ascii_uppercase()),
                b"null" => out.set_value(None),
                b"fields" => {
                    out.set_key(None);
                    out.set_timestamp(42);
                    out.add_header("h", b"x");
                }
                b"late" => {
                    out.value().extend_from_slice(b"v");
                    out.set_key(Some(b"k2"));
                    out.clear_headers();
                }
                b"bad" => {
                    out.value().extend_from_slice(b"partial");
                    return Err(Error::new("bad record"));
                }
                b"undo" => {
                    out.set_value(Some(b"x"));
                    out.keep();
                }
                _ => {
                    let mut w = weir::json::Writer::new(out.value());
                    w.begin_object();
                    w.key("len");
                    w.int(r.value_bytes().len() as i64);
                    w.end_object();
                }
            }
            Ok(())
        });
        Ok(())
    }
    testing::init("{}", init).unwrap();
    let ins: Vec<Input> = ["keep", "upper", "null", "fields", "late", "bad", "undo", "abc"].iter().map(Input::value).collect();
    let got = testing::run(Op::Map, &ins);
    assert_eq!(
        got,
        vec![
            Entry::Keep(0),
            Entry::value(1, "UPPER"),
            rec(2, None, None, None, None),
            rec(3, Some(None), Some(42), Some(vec![(b"h", b"x")]), Some(b"fields")),
            rec(4, Some(Some(b"k2")), None, Some(vec![]), Some(b"v")),
            Entry::error(5, "bad record"),
            Entry::Keep(6),
            Entry::value(7, r#"{"len":3}"#),
        ]
    );
    // No flat_map or filter function: every record is rejected.
    assert_eq!(testing::run(Op::Filter, &ins[..1]), vec![Entry::error(0, "plugin has no filter handler")]);
    assert_eq!(testing::agg_create(), None);
}

#[test]
fn flat_map_and_filter() {
    fn init(_: &Config) -> Result<(), Error> {
        weir::register_flat_map(|r, emit| {
            for w in r.value_bytes().split(|&c| c == b' ').filter(|w| !w.is_empty()) {
                if w == b"!" {
                    return Err(Error::new("bang"));
                }
                if w == b"=" {
                    emit.keep();
                    continue;
                }
                if w == b"ts" {
                    emit.begin().set_timestamp(7);
                    continue;
                }
                emit.emit(Some(w));
            }
            Ok(())
        });
        weir::register_filter(|r| match r.value_bytes() {
            b"x" => Err(Error::new("no x")),
            v => Ok(v.len() % 2 == 0),
        });
        Ok(())
    }
    testing::init("", init).unwrap();
    let got = testing::run(Op::FlatMap, &[Input::value("a b"), Input::value("c ! d"), Input::value(""), Input::value("= ts e")]);
    assert_eq!(
        got,
        vec![
            Entry::value(0, "a"),
            Entry::value(0, "b"),
            Entry::error(1, "bang"),
            Entry::Keep(3),
            rec(3, None, Some(7), None, Some(b"= ts e")),
            Entry::value(3, "e"),
        ]
    );
    let got = testing::run(Op::Filter, &[Input::value("ab"), Input::value("a"), Input::value("x"), Input::value("")]);
    assert_eq!(got, vec![Entry::Keep(0), Entry::error(2, "no x"), Entry::Keep(3)]);
}

#[test]
fn init_errors() {
    fn fails(c: &Config) -> Result<(), Error> {
        c.string("field", "name")?;
        Ok(())
    }
    assert_eq!(testing::init(r#"{"field":"x"}"#, fails), Ok(()));
    assert_eq!(testing::init(r#"{"field":null}"#, fails), Ok(()));
    assert_eq!(testing::init("null", fails), Ok(()));
    assert_eq!(testing::init(" ", fails), Ok(()));
    assert_eq!(testing::init(r#"{"field":5}"#, fails), Err("config: field field must be a string, not number".to_string()));
    assert!(testing::init(r#"{"field":"#, fails).unwrap_err().starts_with("config: json: "));
    fn twice(_: &Config) -> Result<(), Error> {
        weir::register_filter(|_| Ok(true));
        weir::register_filter(|_| Ok(true));
        Ok(())
    }
    assert_eq!(testing::init("{}", twice), Err("weir: filter function already registered".to_string()));
    fn typed(c: &Config) -> Result<(), Error> {
        assert_eq!(c.i64("n", 1)?, 5);
        assert_eq!(c.f64("f", 1.0)?, 2.5);
        assert!(c.bool("b", false)?);
        assert_eq!(c.i64("missing", 9)?, 9);
        Ok(())
    }
    assert_eq!(testing::init(r#"{"n":5,"f":2.5,"b":true}"#, typed), Ok(()));
}

/// The conformance average: sum and count, f64 and i64 little-endian.
struct Avg;

impl Aggregate for Avg {
    type Acc = (f64, i64);
    fn create(&mut self) -> (f64, i64) {
        (0.0, 0)
    }
    fn add(&mut self, acc: &mut (f64, i64), r: &Record) -> Result<(), Error> {
        let v = weir::json::get(r.value_bytes(), "n")?;
        let n = v.as_f64().ok_or("field n is not a number")?;
        acc.0 += n;
        acc.1 += 1;
        Ok(())
    }
    fn merge(&mut self, a: (f64, i64), b: (f64, i64)) -> (f64, i64) {
        (a.0 + b.0, a.1 + b.1)
    }
    fn result(&mut self, acc: &(f64, i64), out: &mut ValueBuf) -> Result<(), Error> {
        if acc.1 < 0 {
            return Err(Error::new("negative count"));
        }
        if acc.1 == 0 {
            out.set_null();
            return Ok(());
        }
        let mut w = weir::json::Writer::new(out);
        w.float(acc.0 / acc.1 as f64);
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
fn aggregate() {
    fn init(_: &Config) -> Result<(), Error> {
        weir::register_aggregate(Avg);
        Ok(())
    }
    testing::init("{}", init).unwrap();
    let fresh = testing::agg_create().unwrap();
    assert_eq!(fresh, enc(0.0, 0));
    let got = testing::agg_add(&[
        (fresh.clone(), vec![Input::value(r#"{"n":1}"#), Input::value(r#"{"n":"x"}"#), Input::value(r#"{"n":2}"#)]),
        (vec![1, 2, 3], vec![Input::value(r#"{"n":1}"#)]),
        (enc(1.0, 1), vec![]),
    ]);
    assert_eq!(got[0], (vec![(1, "field n is not a number".to_string())], enc(3.0, 2)));
    assert_eq!(
        got[1],
        (vec![(0, "bad accumulator: weir: accumulator of 3 bytes ends inside the 8-byte number at byte 0".to_string())], vec![1, 2, 3])
    );
    assert_eq!(got[2], (vec![], enc(1.0, 1)));
    let merged = testing::agg_merge(&[(enc(3.0, 2), enc(1.0, 1)), (vec![], enc(1.0, 1))]);
    assert_eq!(merged[0], Ok(enc(4.0, 3)));
    assert!(merged[1].as_ref().unwrap_err().starts_with("bad accumulator: "));
    let res = testing::agg_result(&[enc(3.0, 2), enc(0.0, 0), enc(1.0, -1)]);
    assert_eq!(res, vec![Ok(Some(b"1.5".to_vec())), Ok(None), Err("negative count".to_string())]);
}

/// Counts records and writes, from its result's context, the key, the
/// window and the count: the conformance window_info.
struct WindowInfo;

impl Aggregate for WindowInfo {
    type Acc = i64;
    fn create(&mut self) -> i64 {
        0
    }
    fn add(&mut self, acc: &mut i64, _: &Record) -> Result<(), Error> {
        *acc += 1;
        Ok(())
    }
    fn merge(&mut self, a: i64, b: i64) -> i64 {
        a + b
    }
    fn result_ctx(&mut self, acc: &i64, ctx: &AggContext<'_>, out: &mut ValueBuf) -> Result<(), Error> {
        if *acc < 0 {
            return Err(Error::new("negative count"));
        }
        let key = ctx.key.map_or("-".to_string(), |k| String::from_utf8_lossy(k).into_owned());
        let win = ctx.window.map_or("-".to_string(), |(s, e)| format!("[{},{})", s, e));
        out.extend_from_slice(format!("{} {} {}", key, win, acc).as_bytes());
        Ok(())
    }
    fn encode(&mut self, acc: &i64, out: &mut ValueBuf) {
        weir::append_i64(out, *acc);
    }
    fn decode(&mut self, b: &[u8]) -> Result<i64, Error> {
        let mut d = weir::AccDecoder::new(b);
        let n = d.i64();
        d.end()?;
        Ok(n)
    }
}

fn count(n: i64) -> Vec<u8> {
    n.to_le_bytes().to_vec()
}

#[test]
fn aggregate_result_ctx() {
    fn init(_: &Config) -> Result<(), Error> {
        weir::register_aggregate(WindowInfo);
        Ok(())
    }
    testing::init("{}", init).unwrap();
    let got = testing::agg_result_ctx(&[
        (AggContext { key: Some(b"k"), window: Some((1000, 2000)) }, count(3)),
        (AggContext { key: Some(b""), window: Some((-5, -5)) }, count(0)),
        (AggContext { key: None, window: None }, count(-1)),
        (AggContext::default(), vec![1]),
    ]);
    assert_eq!(got[0], Ok(Some(b"k [1000,2000) 3".to_vec())));
    assert_eq!(got[1], Ok(Some(b" [-5,-5) 0".to_vec())));
    assert_eq!(got[2], Err("negative count".to_string()));
    assert!(got[3].as_ref().unwrap_err().starts_with("bad accumulator: "));
    // weir_agg_result, from a host that predates the context: an empty one.
    assert_eq!(testing::agg_result(&[count(2)]), vec![Ok(Some(b"- - 2".to_vec()))]);

    // Malformed contexts are frame errors (a trap in a module).
    let good = testing::result_ctx_frame(&[(AggContext { key: None, window: Some((1, 2)) }, count(1))]);
    assert!(testing::run_agg_result_ctx_frame(&good).is_ok());
    let flags_at = 4 + 4; // count, absent key
    for (what, flags, start) in [("unknown flags", 3u8, 1i64), ("bounds without a window", 0, 1), ("start after end", 1, 5)] {
        let mut bad = good.clone();
        bad[flags_at] = flags;
        bad[flags_at + 1..flags_at + 9].copy_from_slice(&start.to_le_bytes());
        let err = testing::run_agg_result_ctx_frame(&bad).expect_err(what);
        assert_eq!(err.offset, flags_at, "{}: {}", what, err);
    }
    assert!(testing::run_agg_result_ctx_frame(&good[..good.len() - 1]).is_err());
}

/// An aggregate that implements `result` only answers weir_agg_result_ctx
/// with it; one that implements neither fails its results.
#[test]
fn aggregate_result_without_ctx() {
    fn init(_: &Config) -> Result<(), Error> {
        weir::register_aggregate(Avg);
        Ok(())
    }
    testing::init("{}", init).unwrap();
    let got = testing::agg_result_ctx(&[(AggContext { key: Some(b"k"), window: Some((0, 1)) }, enc(3.0, 2))]);
    assert_eq!(got, vec![Ok(Some(b"1.5".to_vec()))]);

    struct NoResult;
    impl Aggregate for NoResult {
        type Acc = ();
        fn create(&mut self) {}
        fn add(&mut self, _: &mut (), _: &Record) -> Result<(), Error> {
            Ok(())
        }
        fn merge(&mut self, _: (), _: ()) {}
        fn encode(&mut self, _: &(), _: &mut ValueBuf) {}
        fn decode(&mut self, _: &[u8]) -> Result<(), Error> {
            Ok(())
        }
    }
    fn init_none(_: &Config) -> Result<(), Error> {
        weir::register_aggregate(NoResult);
        Ok(())
    }
    testing::init("{}", init_none).unwrap();
    assert_eq!(
        testing::agg_result(&[vec![]]),
        vec![Err("the aggregate implements neither result nor result_ctx".to_string())]
    );
}

#[test]
fn state_and_logs() {
    static COUNT: weir::ValueState = weir::ValueState::new("count");
    fn init(_: &Config) -> Result<(), Error> {
        weir::log(weir::Level::Info, "init");
        weir::register_map(|r, out| {
            let n = COUNT.get_i64(r)?.unwrap_or(0) + 1;
            COUNT.put_i64(r, n)?;
            weir::log!(weir::Level::Debug, "n = {}", n);
            let mut w = weir::json::Writer::new(out.value());
            w.int(n);
            Ok(())
        });
        Ok(())
    }
    testing::clear_state();
    testing::init("{}", init).unwrap();
    let got = testing::run(Op::Map, &[Input::keyed("a", "x"), Input::keyed("a", "y")]);
    assert_eq!(got, vec![Entry::value(0, "1"), Entry::value(1, "2")]);
    assert_eq!(testing::state(b"vcount"), Some(2i64.to_le_bytes().to_vec()));
    assert_eq!(testing::logs(), vec![(1, "init".to_string()), (0, "n = 1".to_string()), (0, "n = 2".to_string())]);
}

#[test]
fn headers_and_frames() {
    fn init(_: &Config) -> Result<(), Error> {
        weir::register_map(|r, out| {
            let h = r.headers.get("h").unwrap_or(b"-");
            let mut v = out.value();
            v.extend_from_slice(h);
            v.push(b'/');
            v.extend_from_slice(&r.headers.len().to_string().into_bytes());
            v.push(b'/');
            v.extend_from_slice(&r.timestamp.to_string().into_bytes());
            v.push(b'/');
            v.extend_from_slice(if r.key.is_none() { b"nokey" } else { b"key" });
            let _ = &mut v;
            Ok(())
        });
        Ok(())
    }
    testing::init("{}", init).unwrap();
    let mut a = Input::value("v");
    a.timestamp = -5;
    a.headers = vec![(b"a".to_vec(), b"1".to_vec()), (b"h".to_vec(), b"2".to_vec())];
    let b = Input::keyed("", "w");
    assert_eq!(testing::run(Op::Map, &[a, b]), vec![Entry::value(0, "2/2/-5/nokey"), Entry::value(1, "-/0/0/key")]);
    // The worked example of ABI section 11.
    let frame = testing::batch_frame(&[Input { timestamp: 5, ..Input::keyed("k", "v") }]);
    assert_eq!(frame, [1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, b'k', 1, 0, 0, 0, b'v', 0, 0, 0, 0]);
}

#[test]
fn registered_ops() {
    fn nothing(_: &Config) -> Result<(), Error> {
        Ok(())
    }
    fn map(_: &Config) -> Result<(), Error> {
        weir::register_map(|_, _| Ok(()));
        Ok(())
    }
    fn flat_map(_: &Config) -> Result<(), Error> {
        weir::register_flat_map(|_, _| Ok(()));
        Ok(())
    }
    fn filter(_: &Config) -> Result<(), Error> {
        weir::register_filter(|_| Ok(true));
        Ok(())
    }
    fn aggregate(_: &Config) -> Result<(), Error> {
        weir::register_aggregate(Avg);
        Ok(())
    }
    fn by_config(c: &Config) -> Result<(), Error> {
        if c.bool("filter", false)? {
            weir::register_filter(|_| Ok(true));
        } else {
            weir::register_map(|_, _| Ok(()));
        }
        Ok(())
    }
    let cases: &[(&str, &str, fn(&Config) -> Result<(), Error>, u32)] = &[
        ("nothing", "{}", nothing, 0),
        ("map", "{}", map, 1),
        ("flat_map", "{}", flat_map, 2),
        ("filter", "{}", filter, 4),
        ("aggregate", "{}", aggregate, 8),
        ("chosen by the config: map", "{}", by_config, 1),
        ("chosen by the config: filter", r#"{"filter":true}"#, by_config, 4),
    ];
    for (name, config, init, want) in cases {
        testing::init(config, *init).unwrap();
        assert_eq!(testing::ops(), *want, "{}", name);
    }
}
