module cup.test/wasmreconcilers

go 1.26
