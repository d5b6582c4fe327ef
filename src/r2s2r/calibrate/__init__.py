"""World grounding: estimate a cell's WorldParams from measurements taken through ``RealCell``.

Calibration never reads a lab twin's hidden parameters: it sees the lab only through images,
encoders, the scale, the factory calibration file and commanded motions.
"""
