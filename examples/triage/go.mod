module github.com/keelrun/keel/examples/triage

go 1.26.0

replace github.com/keelrun/keel => ../..
