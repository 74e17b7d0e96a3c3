module sudoku-fcgi

go 1.26
