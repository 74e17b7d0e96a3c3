-- wrk script: GET /sudoku for each puzzle of the file $SUDOKU_PUZZLES in turn
-- (lines of 81 cells), used by path.sh (CLIENT=wrk).
local puzzles = {}
for line in io.lines(os.getenv("SUDOKU_PUZZLES")) do
  local p = line:match("^([0-9.]+)")
  if p and #p >= 81 then puzzles[#puzzles + 1] = p:sub(1, 81) end
end
local i = 0
request = function()
  i = i % #puzzles + 1
  return wrk.format("GET", "/sudoku?puzzle=" .. puzzles[i])
end
