"""The differential corpus against RETURNN: the cases (`cases`), fixed values for numeric cases
(`fixed_values`), the comparison (`compare`) and the causes of today's differences (`causes`)."""
