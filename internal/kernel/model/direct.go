package model

import "context"

// Direct makes a Model of a Streamer with no retries, idle timeout or
// limits: for tests of the layers above. Production code wraps providers
// with the transport.
func Direct(s Streamer) Model { return direct{s} }

type direct struct{ s Streamer }

func (d direct) Generate(ctx context.Context, req Request) (Response, error) {
	st, err := d.s.Stream(ctx, req)
	if err != nil {
		return Response{}, err
	}
	defer st.Close()
	return Collect(st)
}
