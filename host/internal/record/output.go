package record

// Output receives what an operator produces from a batch: records, dead
// letters, and the bytes they own. The caller owns it and reuses it from
// batch to batch: an operator appends to Records and Dead, and copies the
// bytes it makes into Arena (and header slices into an internal slab, see
// AllocHeaders); call Reset once the records of the previous batch are no
// longer needed, since Reset lets that memory be overwritten. It is not
// safe for concurrent use.
//
// Records an operator passes on unchanged may be the input records
// themselves, sharing the input's bytes; the caller must keep the input
// alive as long as the output.
type Output struct {
	Records []Record
	Dead    []DeadLetter
	Arena   Arena

	headers []Header // slab for the headers of emitted records
}

// Reset empties o, keeping its memory for reuse.
func (o *Output) Reset() {
	clear(o.Records)
	o.Records = o.Records[:0]
	clear(o.Dead)
	o.Dead = o.Dead[:0]
	o.Arena.Reset()
	clear(o.headers)
	o.headers = o.headers[:0]
}

// headerSlab is the minimum capacity of the header slab.
const headerSlab = 256

// AllocHeaders returns a slice of n headers from the slab. Slices returned
// earlier stay valid: a full slab is replaced, not grown in place.
func (o *Output) AllocHeaders(n int) []Header {
	if cap(o.headers)-len(o.headers) < n {
		o.headers = make([]Header, 0, max(headerSlab, 2*cap(o.headers), n))
	}
	start := len(o.headers)
	o.headers = o.headers[:start+n]
	return o.headers[start : start+n : start+n]
}

// Truncate drops what was appended to o since it had nr records and nd
// dead letters.
func (o *Output) Truncate(nr, nd int) {
	clear(o.Records[nr:])
	o.Records = o.Records[:nr]
	clear(o.Dead[nd:])
	o.Dead = o.Dead[:nd]
}
