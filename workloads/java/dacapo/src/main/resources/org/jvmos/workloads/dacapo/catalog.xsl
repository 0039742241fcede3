<?xml version="1.0" encoding="UTF-8"?>
<!--
  jvmos-dacapo xalan: renders one generated catalog as an HTML report.
  Deliberately uses the XSLT 1.0 features whose cost dominates real stylesheets: keys with
  Muenchian grouping, multi-key sorts, recursive named templates, string functions, format-number,
  xsl:number and sums over node-sets.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" encoding="UTF-8" indent="no"/>

  <xsl:key name="by-category" match="item" use="@category"/>
  <xsl:key name="tag" match="tag" use="."/>

  <xsl:variable name="lower" select="'abcdefghijklmnopqrstuvwxyz'"/>
  <xsl:variable name="upper" select="'ABCDEFGHIJKLMNOPQRSTUVWXYZ'"/>

  <xsl:template match="/catalog">
    <xsl:variable name="firsts" select="item[generate-id() = generate-id(key('by-category', @category)[1])]"/>
    <html>
      <head><title>Catalog <xsl:value-of select="@id"/> (<xsl:value-of select="@region"/>)</title></head>
      <body>
        <h1>Catalog <xsl:value-of select="translate(@id, $lower, $upper)"/></h1>
        <ul class="toc">
          <xsl:for-each select="$firsts">
            <xsl:sort select="@category"/>
            <li><a href="#{@category}"><xsl:value-of select="@category"/></a>
              (<xsl:value-of select="count(key('by-category', @category))"/>)</li>
          </xsl:for-each>
        </ul>
        <xsl:for-each select="$firsts">
          <xsl:sort select="@category"/>
          <xsl:call-template name="category">
            <xsl:with-param name="items" select="key('by-category', @category)"/>
          </xsl:call-template>
        </xsl:for-each>
        <h2>Tags</h2>
        <p class="tags">
          <xsl:for-each select="item/tags/tag[generate-id() = generate-id(key('tag', .)[1])]">
            <xsl:sort select="count(key('tag', .))" data-type="number" order="descending"/>
            <xsl:sort select="."/>
            <xsl:if test="position() &lt;= 20">
              <span class="tag"><xsl:value-of select="."/>:<xsl:value-of select="count(key('tag', .))"/></span>
              <xsl:text> </xsl:text>
            </xsl:if>
          </xsl:for-each>
        </p>
        <p id="summary">items=<xsl:value-of select="count(item)"/>;categories=<xsl:value-of select="count($firsts)"/>;qty=<xsl:value-of select="sum(item/@qty)"/>;price=<xsl:value-of select="sum(item/@price)"/></p>
      </body>
    </html>
  </xsl:template>

  <xsl:template name="category">
    <xsl:param name="items"/>
    <h2 id="{$items[1]/@category}"><xsl:value-of select="$items[1]/@category"/></h2>
    <table>
      <tr><th>#</th><th>SKU</th><th>Name</th><th>Price</th><th>Qty</th><th>Rating</th><th>Tags</th><th>About</th></tr>
      <xsl:for-each select="$items">
        <xsl:sort select="@price" data-type="number" order="descending"/>
        <xsl:sort select="@sku"/>
        <tr class="item">
          <td><xsl:number value="position()" format="001"/></td>
          <td><xsl:value-of select="@sku"/></td>
          <td><xsl:value-of select="concat(translate(substring(name, 1, 1), $lower, $upper), substring(name, 2))"/></td>
          <td class="num"><xsl:value-of select="format-number(@price div 100, '#,##0.00')"/></td>
          <td class="num">
            <xsl:choose>
              <xsl:when test="@qty = 0">sold out</xsl:when>
              <xsl:when test="@qty &lt; 5">low (<xsl:value-of select="@qty"/>)</xsl:when>
              <xsl:otherwise><xsl:value-of select="@qty"/></xsl:otherwise>
            </xsl:choose>
          </td>
          <td><xsl:call-template name="stars"><xsl:with-param name="n" select="@rating"/></xsl:call-template></td>
          <td><xsl:for-each select="tags/tag"><xsl:if test="position() &gt; 1">, </xsl:if><xsl:value-of select="."/></xsl:for-each></td>
          <td><xsl:value-of select="normalize-space(substring(description, 1, 60))"/>
            <xsl:if test="string-length(description) &gt; 60">...</xsl:if></td>
        </tr>
      </xsl:for-each>
      <tr class="total">
        <td colspan="3">total</td>
        <td class="num"><xsl:value-of select="format-number(sum($items/@price) div 100, '#,##0.00')"/></td>
        <td class="num"><xsl:value-of select="sum($items/@qty)"/></td>
        <td colspan="3"><xsl:value-of select="format-number(sum($items/@rating) div count($items), '0.00')"/></td>
      </tr>
    </table>
  </xsl:template>

  <!-- recursion instead of a loop: XSLT 1.0 has none -->
  <xsl:template name="stars">
    <xsl:param name="n"/>
    <xsl:if test="$n &gt; 0">
      <xsl:text>*</xsl:text>
      <xsl:call-template name="stars"><xsl:with-param name="n" select="$n - 1"/></xsl:call-template>
    </xsl:if>
  </xsl:template>
</xsl:stylesheet>
