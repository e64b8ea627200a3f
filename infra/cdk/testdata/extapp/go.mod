module example.com/extapp

go 1.26
