// Command unbid is the filter after the example's outer join: it keeps the
// rows whose bids side is null, the auctions that no bid matched, and
// drops the auction-bid pairs. A row without a bids field is rejected, to
// the dead-letter output: it did not come from the join.
package main

import (
	"errors"

	"github.com/weir-stream/weir/abi/wjson"
	weir "github.com/weir-stream/weir/guest-sdk/go"
)

func init() {
	weir.Filter(func(r *weir.Record) (bool, error) {
		v, err := wjson.Get(r.Value, "bids")
		if err != nil {
			return false, err
		}
		if !v.Exists() {
			return false, errors.New("the row has no bids field")
		}
		return v.Kind == wjson.Null, nil
	})
}

func main() {}
