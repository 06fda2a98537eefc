// Package fields is the host's native side of the typed-field calling
// convention (abi/ABI.md §14): it compiles a module's field declaration,
// extracts the declared fields of a batch of JSON records into a typed
// batch frame, and applies the patches a guest answers with to the
// original record values.
//
// # Extraction
//
// Compile checks a declaration frame (abi.ParseFieldDecls) and compiles
// its paths into one wjson.PathSet, so that an Extractor reads each record
// once, whatever the number of fields, and validates it whole as it goes.
// Per record and field it decides a status and a value:
//
//   - a record whose value is not JSON is rejected, whatever the policies,
//     with the reason "value is not JSON: <syntax error>";
//   - a record without a value (a Kafka tombstone), or whose value is not
//     an object, has every field missing; a path through a member that is
//     not an object leads nowhere (missing);
//   - JSON null is status null (for every type, raw included);
//   - int takes a number whose value is an integer within int64, exactly,
//     whatever its spelling: 9007199254740993, 1.0, 1e3 and 12.5e1 are
//     integers; 1.5 and 1e19 are a mismatch. Jackson-based readers (Flink's
//     JSON format, Kafka Connect's JsonConverter) would truncate 1.5 to 1;
//     weir does not lose data silently;
//   - float takes any number, as the nearest binary64; a number beyond its
//     range (1e400) is a mismatch;
//   - bool takes true and false, string a JSON string (decoded: escapes
//     and surrogate pairs resolved, invalid UTF-8 replaced by U+FFFD, as
//     encoding/json does), raw any value but null (its exact source text);
//   - an object repeating a name counts its last occurrence, as
//     encoding/json does; a nested path follows the last occurrence of
//     each name on the way.
//
// A field that is missing or null under abi.FieldRequired, or a mismatch
// under abi.FieldStrict, rejects its record with a reason naming the path:
// `field "user.age": want int, found string`. Rejected records are left out
// of the frame; Batch.Kept maps frame records to input records.
//
// # Patches
//
// A Patcher applies a patch's operations in order, each to the result of
// the one before, rewriting only the bytes an operation changes: every
// other member keeps its bytes, including whitespace, and its place.
//
//   - set replaces the value of the member's last occurrence, or appends
//     the member at the end of its object. Missing objects on the way are
//     created, and so are those that are null; a member on the way of
//     another kind is an error. Numbers are written by the host: integers
//     in decimal, floats as wjson.AppendFloat writes them (the shortest
//     round-trip digits, as Python's repr), NaN and infinities as null;
//     strings are quoted by wjson.AppendQuote; raw values must be one
//     JSON value (ErrBadRawValue otherwise), written without the
//     whitespace around it;
//   - remove removes every occurrence of the member, and does nothing when
//     it, or an object on the way, is not there;
//   - a set of the empty path replaces the whole value;
//   - a value that is absent or JSON null is patched as {} by a set, and
//     left as it is by a remove; a value of another kind than an object is
//     an error for a set of a field, and left alone by a remove;
//   - a patched value nesting deeper than wjson.MaxDepth is an error (only
//     values longer than that many bytes are read again to check it).
//
// # Concurrency and lifetime
//
// A Decl is immutable and may be shared. An Extractor and a Patcher keep
// buffers between calls and must be used by one goroutine at a time; what
// they return aliases those buffers and is valid until their next call.
package fields
