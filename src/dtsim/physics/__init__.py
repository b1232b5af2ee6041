"""Pure, vectorized cost primitives.

Every function here takes NumPy arrays (or scalars) that broadcast against each other and returns
arrays; none of them branch in Python on values. Each cites the seed section or paper it implements.
Units are SI: seconds, bytes, bits, FLOP, FLOP/s, bits/s.
"""
