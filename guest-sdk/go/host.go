package weir

// hostAPI is the host functions the SDK calls (abi.ImportModule). The wasip1
// build implements it with //go:wasmimport functions; native builds have a
// stand-in without a host, and tests install fakes.
//
// Pointers do not appear here: the implementation turns each slice into the
// pointer and length the ABI passes.
type hostAPI interface {
	// log writes one log line (abi.ImportLog).
	log(level int32, msg string)
	// stateGet reads the state under key for the record at index, copying
	// up to len(dst) bytes into dst, and returns the value's full length or
	// a negative status (abi.ImportStateGet).
	stateGet(index uint32, key, dst []byte) int32
	// statePut writes value under key (abi.ImportStatePut).
	statePut(index uint32, key, value []byte) int32
	// stateDelete deletes key (abi.ImportStateDelete).
	stateDelete(index uint32, key []byte) int32
}

// host is the host the SDK talks to. Only tests change it.
var host hostAPI = defaultHost{}
