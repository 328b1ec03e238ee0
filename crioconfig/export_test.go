package crioconfig

// For the external tests (real_test.go).
var (
	WatchNames  = watchNames
	OnlyDropIns = onlyDropIns
)
